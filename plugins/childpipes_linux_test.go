package plugins_test

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/testwait"
	"github.com/bas-platform/bas/plugins"
	"github.com/bas-platform/bas/plugins/plugintest"
)

// TestChaosChildHoldsPipes: a plugin that started a child process holding
// its stdout and stderr (a wrapper script's real plugin, a helper) neither
// holds up the host nor outlives it. go-plugin waits for the pipes' end
// before it lets the host go on, and the child kept them open for good:
// a start that failed its handshake held Load (and so bas.Open), a plugin
// that exited mid-call was never restarted, and Close hung; each child
// was left running.
func TestChaosChildHoldsPipes(t *testing.T) {
	t.Parallel()
	for _, test := range []struct {
		name  string
		start string
	}{
		{"failed start", "child-garbage"},
		{"exit mid-call", "child"},
	} {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			path, startLog := chaosPlugin(t)
			children := filepath.Join(t.TempDir(), "children")
			t.Cleanup(func() { // what a failing run leaves
				for _, pid := range starts(t, children) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			h := plugins.NewHost(plugins.HostOptions{Logger: discardLogger(), StartTimeout: time.Second,
				RestartBackoffMin: 5 * time.Millisecond, RestartBackoffMax: 50 * time.Millisecond,
				Env: []string{"BAS_CHAOS_LOG=" + startLog, "BAS_CHAOS_START=" + test.start, "BAS_CHAOS_CHILDREN=" + children}})
			type result struct {
				p   capability.Provider
				err error
			}
			loaded := make(chan result, 1)
			go func() {
				p, err := h.Load(context.Background(), path)
				loaded <- result{p, err}
			}()
			r := testwait.Recv(t, loaded, "Load returned")
			p, err := r.p, r.err
			if test.start == "child-garbage" {
				if err == nil {
					t.Fatal("loaded; want a handshake failure")
				}
				contains(t, "Load error", err.Error(), "handshake failed (not a bas plugin?)")
			} else {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if _, err := chaosCall(p, `{"do": "exit"}`); err == nil {
					t.Fatal("the call that exits answered")
				}
				testwait.Until(t, "the plugin is back", func() bool { _, err := chaosCall(p, `{}`); return err == nil })
				if n := len(starts(t, startLog)); n < 2 {
					t.Errorf("%d starts, want the first and a restart", n)
				}
			}
			closed := make(chan error, 1)
			go func() { closed <- h.Close() }()
			if err := testwait.Recv(t, closed, "Close returned"); err != nil {
				t.Fatal(err)
			}
			if len(starts(t, children)) == 0 {
				t.Fatal("no child was started")
			}
			noneAlive(t, "after Close", starts(t, startLog))
			testwait.Until(t, "no child of a plugin runs", func() bool {
				for _, pid := range starts(t, children) {
					if plugintest.Alive(pid) {
						return false
					}
				}
				return true
			})
		})
	}
}
