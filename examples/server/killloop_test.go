package main

// The kill loop: the server runs as a child process on one data directory
// while several tenants send a mixed keyed load (run starts, task
// completions, approvals, CRM writes, invoices created, finalized and
// paid); it is killed with SIGKILL at a random moment, restarted, and every
// request that got no answer is sent again with the same Idempotency-Key;
// over and over. At the end every key maps to exactly one record, every run
// finished once, every outbox message went out once per key, invoice
// numbers are unique and gap-free, payments add up and no task or approval
// is left open.
//
//	go test ./examples/server -run TestKillLoop -kill-cycles 50   # the long version

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bas-platform/bas/internal/testwait"
)

var killCycles = flag.Int("kill-cycles", 5, "SIGKILL cycles of TestKillLoop (50 for the long version)")

const taskProcess = `{"name": "Look", "trigger": {"type": "manual"},
  "steps": [{"key": "look", "type": "human_task", "config": {"title": "Look at ${subject.label}"}}]}`

const approveProcess = `{"name": "Approve routing", "trigger": {"type": "manual"},
  "steps": [{"key": "route", "type": "route", "controls": {"require_approval": true},
    "config": {"rules": [{"when": {"subject.type": "invoice"}, "queue": "ap"}], "default": {"queue": "other"}}}]}`

// klTenant is one tenant of the load and what it set up.
type klTenant struct {
	id, token                      string
	chase, task, approve, customer string
}

// scenario is one piece of work, a sequence of keyed requests; next is
// the step to send (again) and vars what earlier steps answered.
type scenario struct {
	kind   string
	tenant *klTenant
	key    string
	next   int
	vars   map[string]string
	// tookEffect counts retries answered "took effect".
	tookEffect int
}

// errServerGone says the server died under a request.
var errServerGone = fmt.Errorf("server gone")

// errTookEffect says a keyed retry answered that its first try took effect.
var errTookEffect = fmt.Errorf("took effect")

// find reads a list and returns the id of the item whose field has value.
func find(c *client, path, field, value string) (string, error) {
	status, raw, _, err := c.call("GET", path+"?limit=200", nil)
	if err != nil {
		return "", errServerGone
	}
	var items []map[string]any
	if status != http.StatusOK || json.Unmarshal(raw, &items) != nil {
		return "", fmt.Errorf("list %s: %d %s", path, status, raw)
	}
	for _, it := range items {
		v := it[field]
		if lines, ok := it["lines"].([]any); ok && field == "line" && len(lines) > 0 {
			v = lines[0].(map[string]any)["description"]
		}
		if v == value {
			return it["id"].(string), nil
		}
	}
	return "", fmt.Errorf("no item of %s has %s %q", path, field, value)
}

// step sends the scenario's next request; done says the scenario is over.
func (s *scenario) step(t *testing.T, c *client) (done bool, err error) {
	tn := s.tenant
	keyed := func(path string, body any, want int, v any) error {
		key := fmt.Sprintf("%s/%d", s.key, s.next)
		status, raw, _, err := c.keyedCall(path, key, body)
		if err != nil {
			return errServerGone
		}
		if status == http.StatusConflict && strings.Contains(string(raw), "took effect") {
			// The documented answer for a route outside the run engine
			// whose effect committed but whose response was not kept:
			// read the result instead.
			s.tookEffect++
			return errTookEffect
		}
		if status != want {
			return fmt.Errorf("%s %s key %s: status %d, want %d: %s", s.kind, path, key, status, want, raw)
		}
		if v != nil {
			return json.Unmarshal(raw, v)
		}
		return nil
	}
	var out struct {
		ID    string `json:"id"`
		Total int64  `json:"total_cents"`
		Steps []struct {
			TaskID     *string `json:"task_id"`
			ApprovalID *string `json:"approval_id"`
		} `json:"steps"`
	}
	start := func(proc string) error {
		err := keyed("/v1/processes/"+proc+"/start", map[string]any{"subject": map[string]any{"type": "invoice", "label": s.key}}, http.StatusCreated, &out)
		s.vars["run"] = out.ID
		return err
	}
	// awaitStep polls the run until its step has a task or approval.
	awaitStep := func(field string) error {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			status, raw, _, err := c.call("GET", "/v1/process-runs/"+s.vars["run"], nil)
			if err != nil {
				return errServerGone
			}
			if status != http.StatusOK {
				return fmt.Errorf("read run %s: %d %s", s.vars["run"], status, raw)
			}
			if err := json.Unmarshal(raw, &out); err != nil {
				return err
			}
			if len(out.Steps) > 0 {
				if field == "task" && out.Steps[0].TaskID != nil {
					s.vars["task"] = *out.Steps[0].TaskID
					return nil
				}
				if field == "approval" && out.Steps[0].ApprovalID != nil {
					s.vars["approval"] = *out.Steps[0].ApprovalID
					return nil
				}
			}
		}
		return fmt.Errorf("run %s never reached its %s", s.vars["run"], field)
	}
	steps := map[string][]func() error{
		"run": {func() error { return start(tn.chase) }},
		"task": {func() error { return start(tn.task) }, func() error { return awaitStep("task") },
			func() error {
				return keyed("/v1/tasks/"+s.vars["task"]+"/complete", map[string]any{"action": "complete"}, http.StatusOK, nil)
			}},
		"approval": {func() error { return start(tn.approve) }, func() error { return awaitStep("approval") },
			func() error {
				return keyed("/v1/approvals/"+s.vars["approval"]+"/approve", map[string]any{}, http.StatusOK, nil)
			}},
		"crm": {func() error {
			err := keyed("/v1/crm/companies", map[string]any{"name": "Co " + s.key}, http.StatusCreated, &out)
			if err == errTookEffect {
				out.ID, err = find(c, "/v1/crm/companies", "name", "Co "+s.key)
			}
			s.vars["company"] = out.ID
			return err
		}, func() error {
			err := keyed("/v1/crm/deals", map[string]any{"title": "Deal " + s.key, "amount_cents": 500, "company_id": s.vars["company"]}, http.StatusCreated, nil)
			if err == errTookEffect {
				_, err = find(c, "/v1/crm/deals", "title", "Deal "+s.key)
			}
			return err
		}},
		"invoice": {func() error {
			err := keyed("/v1/invoicing/invoices", map[string]any{"customer_id": tn.customer,
				"lines": []any{map[string]any{"description": "Work " + s.key, "quantity": 2, "unit_amount_cents": 1250}}}, http.StatusCreated, &out)
			if err == errTookEffect {
				out.ID, err = find(c, "/v1/invoicing/invoices", "line", "Work "+s.key)
			}
			s.vars["invoice"] = out.ID
			return err
		}, func() error {
			err := keyed("/v1/invoicing/invoices/"+s.vars["invoice"]+"/finalize", map[string]any{}, http.StatusOK, &out)
			if err == errTookEffect {
				status, raw, _, gerr := c.call("GET", "/v1/invoicing/invoices/"+s.vars["invoice"], nil)
				if gerr != nil {
					return errServerGone
				}
				if status != http.StatusOK {
					return fmt.Errorf("read invoice: %d %s", status, raw)
				}
				err = json.Unmarshal(raw, &out)
			}
			s.vars["total"] = fmt.Sprint(out.Total)
			return err
		}, func() error {
			var total int64
			_, _ = fmt.Sscan(s.vars["total"], &total)
			err := keyed("/v1/invoicing/invoices/"+s.vars["invoice"]+"/pay", map[string]any{"amount_cents": total, "method": "cash"}, http.StatusOK, nil)
			if err == errTookEffect {
				return nil // the check at the end reads every invoice
			}
			return err
		}},
	}[s.kind]
	if err := steps[s.next](); err != nil {
		return false, err
	}
	s.next++
	return s.next == len(steps), nil
}

// TestKillLoop is the kill loop; -kill-cycles sets the number of kills.
func TestKillLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("the kill loop runs the server as a child process")
	}
	bin := buildServer(t)
	dir := filepath.Join(t.TempDir(), "data")
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 18))
	t.Logf("seed %d, %d cycles", seed, *killCycles)

	srv := startServer(t, bin, dir, "setup")
	anon := newClient(srv.base, "")
	var tenants []*klTenant
	for _, id := range []string{"ten_k1", "ten_k2", "ten_k3"} {
		var sess struct {
			Token string `json:"token"`
		}
		anon.must(t, "POST", "/v1/auth/dev-login", map[string]any{"tenant_id": id}, http.StatusCreated, &sess)
		c := newClient(srv.base, sess.Token)
		tn := &klTenant{id: id, token: sess.Token}
		var r record
		c.must(t, "POST", "/v1/processes", json.RawMessage(chaseProcess), http.StatusCreated, &r)
		tn.chase = r.ID
		c.must(t, "POST", "/v1/processes", json.RawMessage(taskProcess), http.StatusCreated, &r)
		tn.task = r.ID
		c.must(t, "POST", "/v1/processes", json.RawMessage(approveProcess), http.StatusCreated, &r)
		tn.approve = r.ID
		c.must(t, "POST", "/v1/invoicing/customers", map[string]any{"name": "Buyer of " + id}, http.StatusCreated, &r)
		tn.customer = r.ID
		tenants = append(tenants, tn)
	}

	kinds := []string{"run", "task", "approval", "crm", "invoice"}
	var (
		mu        sync.Mutex
		pending   []*scenario // begun, not finished
		scenarios []*scenario
		n         int
	)
	// take returns a parked scenario, or a new one when fresh is true.
	take := func(fresh bool) *scenario {
		mu.Lock()
		defer mu.Unlock()
		if len(pending) > 0 {
			s := pending[0]
			pending = pending[1:]
			return s
		}
		if !fresh {
			return nil
		}
		n++
		s := &scenario{kind: kinds[n%len(kinds)], tenant: tenants[n%len(tenants)], key: fmt.Sprintf("kl-%d", n), vars: map[string]string{}}
		scenarios = append(scenarios, s)
		return s
	}
	park := func(s *scenario) {
		mu.Lock()
		pending = append(pending, s)
		mu.Unlock()
	}
	// load runs workers until the server dies (or, when fresh is false,
	// until nothing is left to finish).
	load := func(srv *serverProc, fresh bool) {
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				clients := map[*klTenant]*client{}
				for {
					s := take(fresh)
					if s == nil {
						return
					}
					c := clients[s.tenant]
					if c == nil {
						c = newClient(srv.base, s.tenant.token)
						clients[s.tenant] = c
					}
					for {
						done, err := s.step(t, c)
						if err == errServerGone {
							park(s)
							return
						}
						if err != nil {
							t.Errorf("worker %d: %v", w, err)
							return
						}
						if done {
							break
						}
					}
				}
			}()
		}
		wg.Wait()
	}
	srv.kill()
	for cycle := range *killCycles {
		srv = startServer(t, bin, dir, fmt.Sprintf("cycle-%d", cycle))
		done := make(chan struct{})
		go func() { load(srv, true); close(done) }()
		time.Sleep(time.Duration(150+rng.IntN(600)) * time.Millisecond)
		srv.kill()
		testwait.Recv(t, done, "the load saw the killed server gone")
		if t.Failed() {
			t.Fatalf("cycle %d failed; server log:\n%s", cycle, srv.tail())
		}
	}
	// The last start: finish what was begun, then check.
	srv = startServer(t, bin, dir, "final")
	load(srv, false)
	if t.Failed() {
		t.Fatalf("finishing failed; server log:\n%s", srv.tail())
	}
	count := map[string]int{}
	for _, s := range scenarios {
		count[s.kind+"/"+s.tenant.id]++
	}
	tookEffect := 0
	for _, s := range scenarios {
		tookEffect += s.tookEffect
	}
	t.Logf("%d scenarios over %d kills: %v; %d retries answered \"took effect\"", len(scenarios), *killCycles, count, tookEffect)

	for _, tn := range tenants {
		c := newClient(srv.base, tn.token)
		want := func(kind string) int { return count[kind+"/"+tn.id] }
		// Every run finished, once per key.
		if !waitAllFinished(t, c) {
			t.Fatalf("%s: runs never finished; server log:\n%s", tn.id, srv.tail())
		}
		runs := all_(t, c, "/v1/process-runs")
		if got, w := len(runs), want("run")+want("task")+want("approval"); got != w {
			t.Errorf("%s: %d runs, want one per key: %d", tn.id, got, w)
		}
		for _, r := range runs {
			if r.Status != "completed" {
				t.Errorf("%s: run %s is %s", tn.id, r.ID, r.Status)
			}
		}
		// No task or approval left open; one of each per scenario.
		tasks := all_(t, c, "/v1/tasks")
		apprs := all_(t, c, "/v1/approvals")
		if len(tasks) != want("task") || len(apprs) != want("approval") {
			t.Errorf("%s: %d tasks and %d approvals, want %d and %d", tn.id, len(tasks), len(apprs), want("task"), want("approval"))
		}
		for _, x := range append(tasks, apprs...) {
			if x.Status == "open" || x.Status == "pending" {
				t.Errorf("%s: %s is still %s", tn.id, x.ID, x.Status)
			}
		}
		// One message per key in the outbox.
		keys := map[string]int{}
		for _, m := range all[message](t, c, "/v1/outbox") {
			keys[m.IdempotencyKey]++
		}
		for k, n := range keys {
			if n != 1 {
				t.Errorf("%s: outbox key %s sent %d times", tn.id, k, n)
			}
		}
		// CRM: one company and one deal per key.
		if got := len(all_(t, c, "/v1/crm/companies")); got != want("crm") {
			t.Errorf("%s: %d companies, want %d", tn.id, got, want("crm"))
		}
		if got := len(all_(t, c, "/v1/crm/deals")); got != want("crm") {
			t.Errorf("%s: %d deals, want %d", tn.id, got, want("crm"))
		}
		// Invoices: one per key, numbered without gaps, paid in full.
		invoices := all[struct {
			ID     string  `json:"id"`
			Number *string `json:"number"`
			Status string  `json:"status"`
			Total  int64   `json:"total_cents"`
			Paid   int64   `json:"amount_paid_cents"`
		}](t, c, "/v1/invoicing/invoices")
		if len(invoices) != want("invoice") {
			t.Errorf("%s: %d invoices, want %d", tn.id, len(invoices), want("invoice"))
		}
		var numbers []string
		for _, inv := range invoices {
			if inv.Number == nil || inv.Status != "paid" || inv.Paid != inv.Total || inv.Total != 2500 {
				t.Errorf("%s: invoice %s: number %v, %s, paid %d of %d", tn.id, inv.ID, inv.Number, inv.Status, inv.Paid, inv.Total)
				continue
			}
			numbers = append(numbers, *inv.Number)
		}
		sort.Strings(numbers)
		for i, num := range numbers {
			if w := fmt.Sprintf("INV-%06d", i+1); num != w {
				t.Errorf("%s: invoice numbers %s, want INV-000001.. without gaps or repeats", tn.id, strings.Join(numbers, " "))
				break
			}
		}
	}
}

// all_ reads every page of a list of records.
func all_(t *testing.T, c *client, path string) []record { return all[record](t, c, path) }
