// Command server runs a bas workspace standalone and serves its API under
// /api and the web console (package httpapi/console) at /.
//
//	go run ./examples/server -dev
//
// Flags:
//
//	-addr     listen address (default 127.0.0.1:8080)
//	-data     Badger directory (default ./data)
//	-store    where state lives: empty for Badger in -data, or a
//	          PostgreSQL connection string (postgres://user@host:5432/db)
//	-cluster  with -store: work beside other servers on the same database
//	          (each takes a share of the runs; see the README's Scaling)
//	-node-id  this server's name among the -cluster nodes (default
//	          host/pid/random)
//	-cluster-lease-ttl  how long a dead node's share waits before the
//	          others take it over (default 15s)
//	-dev      enable development login (POST /api/v1/auth/dev-login)
//	-plugins  a directory of provider plugins to load
//	-metrics-addr  where /metrics (Prometheus text, the bas_... series) is
//	          served, apart from the API (default 127.0.0.1:9090; empty: off)
//	-webhook-allow  address ranges outbound webhooks may reach besides the
//	          public internet, comma separated (e.g. 127.0.0.0/8 for a
//	          receiver on this host; default none)
//	-backup FILE   write a consistent backup of -data to FILE and exit
//	-restore FILE  restore the backup FILE into -data (empty or new) and exit
//
// SIGINT or SIGTERM shuts it down gracefully.
//
// Connections are bounded in time (see defaultTimeouts): a client has 10
// seconds to send its headers and 60 to send its whole request, a response
// must be written within 90 seconds, and an idle keep-alive connection is
// closed after 120; a body that does not arrive in time is answered 400.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/httpapi"
	"github.com/bas-platform/bas/httpapi/console"
	"github.com/prometheus/client_golang/prometheus"
)

func main() {
	setMemoryLimit()
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout *os.File) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	data := fs.String("data", "./data", "Badger data directory")
	storeURL := fs.String("store", "", "PostgreSQL connection string (postgres://user@host:5432/db) to keep state in instead of Badger in -data")
	cluster := fs.Bool("cluster", false, "with -store: work beside other servers on the same database")
	nodeID := fs.String("node-id", "", "this server's name among the -cluster nodes (default host/pid/random)")
	leaseTTL := fs.Duration("cluster-lease-ttl", 0, "how long a dead -cluster node's share waits before the others take it over (default 15s)")
	dev := fs.Bool("dev", false, "enable development login")
	pluginDir := fs.String("plugins", "", "directory of provider plugins")
	publicURL := fs.String("public-url", "", "base URL of the API in emailed links (default http://<addr>/api)")
	metricsAddr := fs.String("metrics-addr", "127.0.0.1:9090", "address of /metrics, apart from the API (empty: off)")
	webhookAllow := fs.String("webhook-allow", "", "comma-separated address ranges webhooks may reach besides public ones (e.g. 127.0.0.0/8)")
	backup := fs.String("backup", "", "write a backup of -data to this file and exit")
	restore := fs.String("restore", "", "restore this backup file into -data (empty or new) and exit")
	limits := addLimitFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	allow, err := parsePrefixes(*webhookAllow)
	if err != nil {
		return err
	}
	logger := newLogger(os.Stderr)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *restore != "" {
		f, err := os.Open(*restore)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := bas.Restore(ctx, f, *data); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "restored %s into %s\n", *restore, *data)
		return nil
	}

	if *publicURL == "" {
		*publicURL = "http://" + *addr + "/api"
	}
	where := *data
	if *storeURL != "" {
		if !strings.HasPrefix(*storeURL, "postgres://") && !strings.HasPrefix(*storeURL, "postgresql://") {
			return fmt.Errorf("-store %q: want a postgres:// or postgresql:// connection string", redact(*storeURL))
		}
		where = redact(*storeURL)
	}
	if *cluster && *storeURL == "" {
		return fmt.Errorf("-cluster needs -store: the nodes share a PostgreSQL database")
	}
	opts, reg := workspaceOptions(*data, *storeURL, *pluginDir, *publicURL, allow, *metricsAddr != "", logger)
	opts.Cluster, opts.NodeID, opts.ClusterLeaseTTL = *cluster, *nodeID, *leaseTTL
	limits.apply(&opts)
	ws, err := bas.Open(ctx, opts)
	if err != nil {
		return err
	}
	defer ws.Close()
	if *backup != "" {
		if err := writeBackup(ctx, ws, *backup); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "backed up %s to %s\n", *data, *backup)
		return nil
	}

	mux, basePath := newHandler(ws, *dev, logger)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := newServer(mux, defaultTimeouts())
	base := "http://" + ln.Addr().String() + basePath
	fmt.Fprintf(stdout, "bas is serving %s/v1 (data in %s)\n", base, where)
	fmt.Fprintf(stdout, "the console is at http://%s/\n", ln.Addr().String())
	fmt.Fprintln(stdout, providersLine(ws))
	if reg != nil {
		mln, err := net.Listen("tcp", *metricsAddr)
		if err != nil {
			return err
		}
		msrv := &http.Server{Handler: metricsMux(reg), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = msrv.Serve(mln) }()
		defer msrv.Close()
		fmt.Fprintf(stdout, "metrics at http://%s/metrics\n", mln.Addr())
	}
	if *dev {
		fmt.Fprintf(stdout, "development login is on; try:\n  curl -s -X POST %s/v1/auth/dev-login -H 'Content-Type: application/json' -d '{}'\n", base)
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	case <-ctx.Done():
		logger.Info("shutting down")
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// defaultMemoryLimit is the Go heap's soft limit the server sets unless
// GOMEMLIMIT is in its environment: under a sustained load the heap's
// headroom (as much again as the live heap by default) stops growing at
// it, and the collector works harder instead. The library itself never
// sets it: that is the program's choice. GOGC stays 100: in
// BenchmarkServerStart GOGC 75 / 50 took 8% / 12% more CPU per start for
// 6% / 18% less RSS at the end, and a limit of 80 MiB left the RSS at
// the end alike and the starts slower (in 5 of 5 pairs).
const defaultMemoryLimit = 192 << 20

// setMemoryLimit sets defaultMemoryLimit unless GOMEMLIMIT is set, and
// returns the limit it replaced.
func setMemoryLimit() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1)
	}
	return debug.SetMemoryLimit(defaultMemoryLimit)
}

// newLogger is the server's logger: text lines at INFO and above (one
// access line per request) written to w.
func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// workspaceOptions are the options the server opens its workspace with:
// state in Badger under data or in the PostgreSQL database of storeURL,
// and, when metrics is set, the bas_... series in the registry returned.
func workspaceOptions(data, storeURL, pluginDir, publicURL string, allow []netip.Prefix, metrics bool,
	logger *slog.Logger) (bas.Options, *prometheus.Registry) {
	opts := bas.Options{Dir: data, PostgresDSN: storeURL, Logger: logger, PluginDir: pluginDir, PublicURL: publicURL,
		WebhookAllow: allow}
	var reg *prometheus.Registry
	if metrics {
		reg = prometheus.NewRegistry()
		opts.Metrics = reg
	}
	return opts, reg
}

// newHandler is the server's HTTP handler for ws: the API under the base
// path it returns and the web console at /.
func newHandler(ws *bas.Workspace, dev bool, logger *slog.Logger) (http.Handler, string) {
	api := httpapi.New(ws, httpapi.Options{DevLogin: dev, Logger: logger})
	mux := http.NewServeMux()
	mux.Handle(api.BasePath()+"/", api)
	mux.Handle("/", console.New(api, console.Options{APIBase: api.BasePath(), DevLogin: dev, Logger: logger}))
	return &frontHandler{api: api, prefix: api.BasePath() + "/", mux: mux}, api.BasePath()
}

// frontHandler hands a request whose path is under the API's base path
// straight to the API, and every other to mux, which cleans paths (a
// redirect) and serves the console. An API request so skips the mux's
// pattern matching; a path under the base path that is not clean (an empty,
// "." or ".." segment, as in /api/v1/processes//start) is the API's too,
// which answers it with its 404 JSON rather than the mux's redirect with no
// body, which a client would follow to another endpoint or not at all.
type frontHandler struct {
	api    http.Handler
	prefix string
	mux    *http.ServeMux
}

func (f *frontHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.direct(r) {
		f.api.ServeHTTP(w, r)
		return
	}
	f.mux.ServeHTTP(w, r)
}

// direct reports whether r goes straight to the API: its path is under the
// API's base path. A path written with escapes that change its meaning
// (RawPath set, as for %2F) is left to the mux, which matches the escaped
// path segment by segment: "/api%2Fv1/x" is one segment "api/v1" there and
// not under the API's base path, though its decoded Path is.
func (f *frontHandler) direct(r *http.Request) bool {
	return r.Method != http.MethodConnect && r.URL.RawPath == "" && strings.HasPrefix(r.URL.Path, f.prefix)
}

// timeouts bound a connection's phases (see net/http.Server).
type timeouts struct {
	readHeader, read, write, idle time.Duration
}

// defaultTimeouts let a 25 MiB upload arrive at about 0.5 MB/s and its
// extraction (at most 20 seconds) finish, and free slow or idle
// connections soon after.
func defaultTimeouts() timeouts {
	return timeouts{readHeader: 10 * time.Second, read: 60 * time.Second, write: 90 * time.Second, idle: 120 * time.Second}
}

// newServer is the HTTP server of h: every phase of a connection bounded,
// headers at most 64 KiB.
func newServer(h http.Handler, t timeouts) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: t.readHeader, ReadTimeout: t.read,
		WriteTimeout: t.write, IdleTimeout: t.idle, MaxHeaderBytes: 64 << 10}
}

// writeBackup writes ws's backup to path: into a temporary file beside it,
// synced, then renamed, so path is either the whole backup or untouched.
func writeBackup(ctx context.Context, ws *bas.Workspace, path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := ws.Backup(ctx, tmp); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// redact hides the password of a connection string.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable connection string)"
	}
	return u.Redacted()
}
