package bas

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/bas-platform/bas/internal/lease"
	"github.com/bas-platform/bas/runengine"
	"github.com/bas-platform/bas/store/clock"
	"github.com/bas-platform/bas/store/pgstore"
	"github.com/cockroachdb/errors"
)

// engineLease is the lease a workspace holds on its PostgreSQL database
// and schema while it works there.
const engineLease = "engine"

// postgresStore opens the PostgreSQL store Options.PostgresDSN or
// Options.Postgres names, or returns nil when neither is set.
//
// One workspace works on a database and schema at a time: the store holds
// a lease (renewed every 5 seconds, lapsing 15 seconds after its holder
// dies) and every write checks it, so a second workspace waits in Open as
// a standby and takes over when the first is gone, and a workspace that
// lost its lease cannot write over its successor.
func postgresStore(ctx context.Context, opts Options) (Store, error) {
	if opts.PostgresDSN == "" && opts.Postgres == nil {
		return nil, nil
	}
	if opts.InMemory {
		return nil, errors.New("bas: Options.InMemory and a PostgreSQL store (Options.PostgresDSN or Options.Postgres) are both set: choose one")
	}
	s, err := pgstore.Open(ctx, pgstore.Options{DSN: opts.PostgresDSN, Pool: opts.Postgres, Schema: opts.PostgresSchema})
	if err != nil {
		return nil, errors.Wrap(err, "open the PostgreSQL store")
	}
	if opts.Cluster {
		// Every node works here; the engine's shard leases share the work.
		return s, nil
	}
	owner := nodeName()
	// The lease runs on the wall clock whatever Options.Clock is: it is
	// about processes being alive, not about business time.
	g, err := lease.Exclusive(ctx, s, lease.Config{Store: s, Clock: clock.Real{}, Owner: owner}, engineLease, opts.Logger)
	if err != nil {
		_ = s.Close()
		return nil, errors.Wrap(err, "take the PostgreSQL store's lease")
	}
	return g, nil
}

// nodeName names this process among the nodes: host name, process id
// and a random suffix.
func nodeName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Bounds of the cluster options.
const (
	maxClusterShards   = 4096
	minClusterLeaseTTL = time.Second
)

// validateCluster checks the Cluster options (bad makes the error).
func (o Options) validateCluster(bad func(option string, value any, want string) error) error {
	switch {
	case o.Cluster && o.Store == nil && o.PostgresDSN == "" && o.Postgres == nil:
		return bad("Cluster", true, "give the nodes' shared PostgreSQL database (PostgresDSN or Postgres): a Badger directory cannot be shared")
	case o.Cluster && o.InMemory && o.Store == nil:
		return bad("Cluster", true, "an in-memory workspace cannot share its store; drop InMemory or Cluster")
	case !o.Cluster && (o.NodeID != "" || o.ClusterShards != 0 || o.ClusterLeaseTTL != 0):
		return bad("Cluster", false, "set it to true to use NodeID, ClusterShards or ClusterLeaseTTL")
	case len(o.NodeID) > 200:
		return bad("NodeID", fmt.Sprintf("%d bytes long", len(o.NodeID)), "use at most 200 bytes")
	case o.ClusterShards < 0 || o.ClusterShards > maxClusterShards:
		return bad("ClusterShards", o.ClusterShards, fmt.Sprintf("use 1 to %d, or 0 for 32", maxClusterShards))
	case o.ClusterLeaseTTL < 0 || o.ClusterLeaseTTL > 0 && o.ClusterLeaseTTL < minClusterLeaseTTL:
		return bad("ClusterLeaseTTL", o.ClusterLeaseTTL, "use at least 1s, or 0 for 15s")
	}
	return nil
}

// clusterConfig is the engine's cluster configuration; nil when the
// workspace is the only one on its store.
func (o Options) clusterConfig() *runengine.ClusterConfig {
	if !o.Cluster {
		return nil
	}
	id := o.NodeID
	if id == "" {
		id = nodeName()
	}
	// The leases run on the wall clock whatever Options.Clock is: they are
	// about processes being alive, not about business time.
	return &runengine.ClusterConfig{NodeID: id, Shards: o.ClusterShards, LeaseTTL: o.ClusterLeaseTTL, Clock: clock.Real{}}
}

// ownsDelivery is what webhooks.Config.Owns needs when the workspace is a
// node of a cluster: a delivery is sent by the node owning its shard. The
// webhooks start delivering (Open) once the engine is set.
func (ws *Workspace) ownsDelivery() func(id string) bool {
	if !ws.opts.Cluster {
		return nil
	}
	return func(id string) bool { return ws.engine.Owns(id) }
}
