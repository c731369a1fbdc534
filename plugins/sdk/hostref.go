package sdk

import (
	"context"
	"sync"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
)

// HostRef keeps the Host a provider is given. Embed it in a provider struct
// (used through a pointer) to implement HostSetter, then call Emit from
// Call. It is safe for concurrent use.
type HostRef struct {
	mu sync.RWMutex
	h  Host
}

// SetHost records h; the SDK calls it when the host connects.
func (r *HostRef) SetHost(h Host) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h = h
}

// Host returns the Host, or nil before the host has connected.
func (r *HostRef) Host() Host {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.h
}

// Emit sends ev to the host (see Host.Emit); before the host has connected
// it returns an Unavailable error.
func (r *HostRef) Emit(ctx context.Context, ev capability.Event) error {
	h := r.Host()
	if h == nil {
		return errs.Unavailablef("event %s: not connected to a bas host", ev.Name)
	}
	return h.Emit(ctx, ev)
}
