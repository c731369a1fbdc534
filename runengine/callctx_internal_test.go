package runengine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/testwait"
)

type ctxKey struct{}

// withCallDeadline returns a callCtx made with init, as the worker makes
// the one inside a call's value.
func withCallDeadline(parent context.Context, timeout time.Duration) *callCtx {
	c := &callCtx{}
	c.init(parent, timeout)
	return c
}

// TestCallCtx checks that a call's context answers as context.WithTimeout
// would, whether or not anything asked for its Done.
func TestCallCtx(t *testing.T) {
	parent := context.WithValue(context.Background(), ctxKey{}, "v")

	t.Run("open", func(t *testing.T) {
		ctx := withCallDeadline(parent, time.Hour)
		release := ctx.release
		defer release()
		if err := ctx.Err(); err != nil {
			t.Fatalf("Err = %v, want nil", err)
		}
		if d, ok := ctx.Deadline(); !ok || time.Until(d) < 59*time.Minute {
			t.Fatalf("Deadline = %v, %v", d, ok)
		}
		if got := ctx.Value(ctxKey{}); got != "v" {
			t.Fatalf("Value = %v", got)
		}
		if ctx.real.Load() != nil {
			t.Fatal("a context nothing waited on armed a timer")
		}
		select {
		case <-ctx.Done():
			t.Fatal("Done closed early")
		default:
		}
	})

	t.Run("run info", func(t *testing.T) {
		ctx := withCallDeadline(parent, time.Hour)
		ctx.info = &RunInfo{ID: "run_1", StepKey: "s0"}
		child, cancel := context.WithCancel(context.WithValue(ctx, ctxKey{}, "child"))
		defer cancel()
		for i, c := range []context.Context{ctx, child} {
			if info, ok := RunFromContext(c); !ok || info.ID != "run_1" || info.StepKey != "s0" {
				t.Fatalf("context %d: RunFromContext = %+v, %v", i, info, ok)
			}
		}
		if got := ctx.Value(ctxKey{}); got != "v" {
			t.Fatalf("Value = %v", got)
		}
		done := child.Done() // materializes ctx; the info stays
		ctx.release()
		testwait.Recv(t, done, "the released context's Done closed")
		if info, ok := RunFromContext(ctx); !ok || info.ID != "run_1" {
			t.Fatalf("released: RunFromContext = %+v, %v", info, ok)
		}
		if _, ok := RunFromContext(withCallDeadline(parent, time.Hour)); ok {
			t.Fatal("a context without run info told one")
		}
	})

	t.Run("released", func(t *testing.T) {
		ctx := withCallDeadline(parent, time.Hour)
		release := ctx.release
		done := ctx.Done() // armed before release
		release()
		testwait.Recv(t, done, "the released context's Done closed")
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Err = %v, want Canceled", err)
		}
	})

	t.Run("released before Done", func(t *testing.T) {
		ctx := withCallDeadline(parent, time.Hour)
		release := ctx.release
		release()
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Err = %v, want Canceled", err)
		}
		testwait.Recv(t, ctx.Done(), "the released context's Done closed")
		if err := context.Cause(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Cause = %v, want Canceled", err)
		}
	})

	t.Run("deadline passed", func(t *testing.T) {
		ctx := withCallDeadline(parent, -time.Second)
		release := ctx.release
		defer release()
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Err = %v, want DeadlineExceeded", err)
		}
		testwait.Recv(t, ctx.Done(), "the expired context's Done closed")
		if err := context.Cause(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Cause = %v, want DeadlineExceeded", err)
		}
	})

	t.Run("deadline fires while waited on", func(t *testing.T) {
		ctx := withCallDeadline(parent, 10*time.Millisecond)
		release := ctx.release
		defer release()
		testwait.Recv(t, ctx.Done(), "the deadline closed Done")
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Err = %v, want DeadlineExceeded", err)
		}
	})

	t.Run("parent cancelled", func(t *testing.T) {
		p, cancel := context.WithCancelCause(parent)
		ctx := withCallDeadline(p, time.Hour)
		release := ctx.release
		defer release()
		child, stop := context.WithCancel(ctx) // asks for Done
		defer stop()
		why := errors.New("closing")
		cancel(why)
		testwait.Recv(t, child.Done(), "the parent's cancellation reached the child")
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Err = %v, want Canceled", err)
		}
		if err := context.Cause(ctx); err != why {
			t.Fatalf("Cause = %v, want %v", err, why)
		}
	})

	t.Run("parent cancelled, nothing waiting", func(t *testing.T) {
		p, cancel := context.WithCancel(parent)
		ctx := withCallDeadline(p, time.Hour)
		release := ctx.release
		defer release()
		cancel()
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Err = %v, want Canceled", err)
		}
		testwait.Recv(t, ctx.Done(), "the parent's cancellation closed Done")
	})

	t.Run("parent's sooner deadline", func(t *testing.T) {
		p, cancel := context.WithTimeout(parent, time.Minute)
		defer cancel()
		ctx := withCallDeadline(p, time.Hour)
		release := ctx.release
		defer release()
		if d, _ := ctx.Deadline(); time.Until(d) > time.Minute {
			t.Fatalf("Deadline = %v, want the parent's", d)
		}
	})
}

// BenchmarkCallCtx compares a call's context with context.WithTimeout for
// a call that never waits on Done.
func BenchmarkCallCtx(b *testing.B) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.Run("withCallDeadline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx := withCallDeadline(parent, time.Minute)
			_, _ = ctx.Deadline()
			ctx.release()
		}
	})
	b.Run("WithTimeout", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx, release := context.WithTimeout(parent, time.Minute)
			_, _ = ctx.Deadline()
			release()
		}
	})
}
