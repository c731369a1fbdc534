package httpapi

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/runengine"
	"github.com/cockroachdb/errors"
)

// registerStreamRoutes declares GET /v1/stream, the workspace's events as
// server-sent events.
func (h *Handler) registerStreamRoutes() {
	// Every caller may open it; each event is sent only to a caller whose
	// app limit and permissions let it read the event's records.
	h.handle("GET", "/v1/stream", "", "", h.handleStream).File(200, "text/event-stream").Query("names", "after").Errors(429)
}

// Bounds of GET /v1/stream.
const (
	// MaxStreamNames bounds the names ?names= may list.
	MaxStreamNames = 20
	// streamRetry is the reconnection delay the stream asks EventSource
	// for, in milliseconds.
	streamRetry = 3000
)

// streamName is one ?names= entry: an event name, or a prefix ending in
// ".*" (task.*).
var streamName = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*(\.\*)?$`)

// eventAccess is the app and permission that reading an event needs: the
// app and read permission of the records it tells of.
func eventAccess(name string) (app, perm string) {
	ns, _, _ := strings.Cut(name, ".")
	switch ns {
	case "task", "approval":
		return access.AppTasks, access.PermProcessesRead
	case "docs":
		return access.AppDocs, access.PermDocsRead
	case "crm":
		return access.AppCRM, access.PermCRMRead
	case "invoicing":
		return access.AppInvoicing, access.PermInvoicingRead
	case "boards":
		return access.AppBoards, access.PermBoardsRead
	case "usecases":
		return access.AppUsecases, ""
	case "decisions":
		return access.AppDecisions, access.PermProcessesRead
	case "ai":
		return access.AppCapabilities, ""
	case "webhook":
		return access.AppAutomation, access.PermAutomationManage
	}
	// process.* and the events published from outside (POST /v1/events,
	// plugins), which start and feed runs.
	return access.AppProcesses, access.PermProcessesRead
}

// streamSlots counts the open streams of each person.
type streamSlots struct {
	mu   sync.Mutex
	open map[string]int
}

// take holds one of who's max slots, reporting false when none is free.
func (s *streamSlots) take(who string, max int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[who] >= max {
		return false
	}
	if s.open == nil {
		s.open = map[string]int{}
	}
	s.open[who]++
	return true
}

// give frees one of who's slots.
func (s *streamSlots) give(who string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[who]--; s.open[who] <= 0 {
		delete(s.open, who)
	}
}

// mayRead reports whether the caller may receive an event named name.
func mayRead(p *access.Principal, name string) bool {
	app, perm := eventAccess(name)
	return p.AllowsApp(app) && (perm == "" || p.Can(perm))
}

// handleStream serves GET /v1/stream?names=&after=: the caller's
// workspace's events as text/event-stream, each once its change is
// durable, as
//
//	id: <cursor>
//	event: <name>
//	data: <the event as JSON>
//
// An EventSource that reconnects sends the last id as Last-Event-ID (or
// the client passes ?after=), and the stream goes on right after it. When
// events were lost to the caller (it fell too far behind, or the cursor is
// no longer held) a "missed" event says so, with the cursor to go on from:
// the client reads the state again. A comment line is sent every
// Options.StreamHeartbeat; the stream ends when the client goes away, its
// credential stops working (checked at each heartbeat), or the workspace
// closes ("end" event).
func (h *Handler) handleStream(c *request) error {
	q := c.Query()
	var vs []errs.Violation
	var names []string
	if raw := q.Get("names"); raw != "" {
		names = strings.Split(raw, ",")
		if len(names) > MaxStreamNames {
			vs = append(vs, errs.Violation{Loc: []any{"query", "names"}, Type: "too_long",
				Msg: "must list at most 20 names"})
		}
		for i, n := range names {
			if len(n) > 200 || !streamName.MatchString(n) {
				vs = append(vs, errs.Violation{Loc: []any{"query", "names", i}, Type: "string_pattern_mismatch",
					Msg: "must be an event name or a prefix ending in .* (task.*)"})
			}
		}
	}
	after := q.Get("after")
	if after == "" {
		after = c.R.Header.Get("Last-Event-ID")
	}
	if len(after) > 200 {
		vs = append(vs, errs.Violation{Loc: []any{"query", "after"}, Type: "string_too_long", Msg: "must be at most 200 characters"})
	}
	if len(vs) > 0 {
		return errs.Validation(vs...)
	}
	who := principalKey(c.P.Tenant, c.P.UserID)
	if !h.streams.take(who, h.opts.MaxStreamsPerPerson) {
		return errors.Mark(&errs.RateLimit{RetryAfter: 5 * time.Second,
			Msg: "too many open event streams; close one first"}, errs.RateLimited)
	}
	defer h.streams.give(who)
	ctx := c.Context()
	events := h.ws.Engine().Subscribe(ctx, runengine.SubscribeParams{Tenant: c.Tenant(), Names: names, After: after})

	w := c.W
	rc := http.NewResponseController(w)
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no") // a buffering proxy in front passes each event on at once
	w.WriteHeader(http.StatusOK)
	beat := h.opts.StreamHeartbeat
	var buf []byte
	send := func(b []byte) bool {
		// A stream outlives the server's write timeout: each write gets
		// its own deadline.
		_ = rc.SetWriteDeadline(time.Now().Add(2*beat + 10*time.Second))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	buf = append(buf, "retry: "...)
	buf = strconv.AppendInt(buf, streamRetry, 10)
	buf = append(buf, "\n\n"...)
	if !send(buf) {
		return nil
	}

	// The subscription runs on its own goroutine, so that the heartbeat
	// ticks while no event comes.
	type item struct {
		n   runengine.Notice
		err error
	}
	items := make(chan item)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(items)
		for n, err := range events {
			select {
			case items <- item{n, err}:
			case <-done:
				return
			}
			if err != nil && !errors.Is(err, runengine.ErrMissed) {
				return
			}
		}
	}()
	tick := time.NewTicker(beat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if _, err := h.authenticate(c.R); err != nil {
				send([]byte("event: end\ndata: {\"detail\":\"not authenticated\"}\n\n"))
				return nil
			}
			if !send([]byte(": keep-alive\n\n")) {
				return nil
			}
		case it, ok := <-items:
			switch {
			case !ok:
				return nil
			case errors.Is(it.err, runengine.ErrMissed):
				buf = append(buf[:0], "id: "...)
				buf = append(buf, it.n.Cursor...)
				buf = append(buf, "\nevent: missed\ndata: {\"detail\":\"events were missed; read the state again\"}\n\n"...)
			case it.err != nil:
				if ctx.Err() == nil {
					send([]byte("event: end\ndata: {\"detail\":\"the workspace is closing\"}\n\n"))
				}
				return nil
			case !mayRead(c.P, it.n.Event.Name):
				continue
			default:
				raw, err := json.Marshal(it.n.Event)
				if err != nil {
					h.log.Error("encode a streamed event", "event", it.n.Event.ID, "error", err)
					continue
				}
				buf = append(buf[:0], "id: "...)
				buf = append(buf, it.n.Cursor...)
				buf = append(buf, "\nevent: "...)
				buf = append(buf, it.n.Event.Name...)
				buf = append(buf, "\ndata: "...)
				buf = append(buf, raw...)
				buf = append(buf, "\n\n"...)
			}
			if !send(buf) {
				return nil
			}
		}
	}
}
