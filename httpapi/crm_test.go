package httpapi_test

// HTTP tests of the CRM app: the default pipeline, references, the board
// and its counters against a sum over the deals, closed_at through won,
// lost and reopen, stage and company deletes, filtered lists, every bound
// of interface.md section 8 for the CRM records, permissions, and a
// process triggered by crm.deal.won that logs an activity through the
// capability.

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bas-platform/bas/httpapi"
	"github.com/google/go-cmp/cmp"
)

type crmStage struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Position    int    `json:"position"`
	Probability int    `json:"probability"`
	Kind        string `json:"kind"`
}

type crmPipeline struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	IsDefault bool       `json:"is_default"`
	Stages    []crmStage `json:"stages"`
}

func (p crmPipeline) stage(t *testing.T, name string) crmStage {
	t.Helper()
	for _, s := range p.Stages {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("pipeline %s has no stage %s", p.Name, name)
	return crmStage{}
}

type crmDeal struct {
	ID            string  `json:"id"`
	Title         string  `json:"title"`
	AmountCents   int64   `json:"amount_cents"`
	Currency      string  `json:"currency"`
	PipelineID    string  `json:"pipeline_id"`
	StageID       string  `json:"stage_id"`
	Status        string  `json:"status"`
	CompanyID     *string `json:"company_id"`
	ContactID     *string `json:"contact_id"`
	OwnerID       *string `json:"owner_id"`
	ExpectedClose *string `json:"expected_close"`
	ClosedAt      *string `json:"closed_at"`
	CreatedAt     string  `json:"created_at"`
}

type crmColumn struct {
	Stage         crmStage  `json:"stage"`
	Deals         []crmDeal `json:"deals"`
	TotalCents    int64     `json:"total_cents"`
	Count         int64     `json:"count"`
	WeightedCents int64     `json:"weighted_cents"`
	Totals        []struct {
		Currency   string `json:"currency"`
		Count      int64  `json:"count"`
		TotalCents int64  `json:"total_cents"`
	} `json:"totals"`
}

// crmPost creates a record and returns its id.
func (s *testServer) crmPost(t *testing.T, token, path, body string) string {
	t.Helper()
	var v struct{ ID string }
	// Records made at one instant of a test's clock sort in the order
	// made only while no other test makes ids: step the clock.
	s.clock.Advance(time.Millisecond)
	s.do(t, "POST", path, token, body).want(t, http.StatusCreated).decode(t, &v)
	return v.ID
}

func (s *testServer) defaultPipeline(t *testing.T, token string) crmPipeline {
	t.Helper()
	var ps []crmPipeline
	s.do(t, "GET", "/v1/crm/pipelines", token, nil).want(t, http.StatusOK).decode(t, &ps)
	for _, p := range ps {
		if p.IsDefault {
			return p
		}
	}
	t.Fatalf("no default pipeline in %+v", ps)
	return crmPipeline{}
}

func (s *testServer) deal(t *testing.T, token, id string) crmDeal {
	t.Helper()
	var d crmDeal
	s.do(t, "GET", "/v1/crm/deals/"+id, token, nil).want(t, http.StatusOK).decode(t, &d)
	return d
}

func (s *testServer) board(t *testing.T, token, pipelineID string) []crmColumn {
	t.Helper()
	var cols []crmColumn
	s.do(t, "GET", "/v1/crm/pipelines/"+pipelineID+"/board", token, nil).want(t, http.StatusOK).decode(t, &cols)
	return cols
}

// wantBoardMatchesDeals checks every column's count, total and weighted
// total against a sum over all the pipeline's deals, read from the list.
func (s *testServer) wantBoardMatchesDeals(t *testing.T, token string, p crmPipeline) []crmColumn {
	t.Helper()
	cols := s.board(t, token, p.ID)
	var all []crmDeal
	for _, page := range s.pages(t, token, "/v1/crm/deals?limit=200&pipeline_id="+p.ID) {
		for _, id := range page {
			all = append(all, s.deal(t, token, id))
		}
	}
	type fig struct{ Count, Total, Weighted int64 }
	want := map[string]fig{}
	got := map[string]fig{}
	for _, c := range cols {
		got[c.Stage.Name] = fig{c.Count, c.TotalCents, c.WeightedCents}
		f := fig{}
		for _, d := range all {
			if d.StageID == c.Stage.ID {
				f.Count++
				f.Total += d.AmountCents
			}
		}
		f.Weighted = f.Total * int64(c.Stage.Probability) / 100
		want[c.Stage.Name] = f
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("board figures (-sum over deals +board):\n%s", diff)
	}
	return cols
}

func TestCRMHTTPPipelinesAndBoard(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token

	p := s.defaultPipeline(t, admin)
	var stages []string
	for i, st := range p.Stages {
		stages = append(stages, fmt.Sprintf("%d %s %d %s", st.Position, st.Name, st.Probability, st.Kind))
		if st.Position != i || !strings.HasPrefix(st.ID, "stg_") {
			t.Errorf("stage %+v at %d", st, i)
		}
	}
	want := []string{"0 Lead 10 open", "1 Qualified 25 open", "2 Proposal 50 open", "3 Negotiation 75 open", "4 Won 100 won", "5 Lost 0 lost"}
	if diff := cmp.Diff(want, stages); diff != "" {
		t.Errorf("default stages (-want +got):\n%s", diff)
	}
	if again := s.defaultPipeline(t, admin); again.ID != p.ID {
		t.Errorf("a second read made another default pipeline: %s, %s", p.ID, again.ID)
	}

	// A deal without a stage lands in Lead, in USD, for 0.
	var d crmDeal
	s.do(t, "POST", "/v1/crm/deals", admin, `{"title": "Bare"}`).want(t, http.StatusCreated).decode(t, &d)
	if d.StageID != p.stage(t, "Lead").ID || d.PipelineID != p.ID || d.Currency != "USD" || d.AmountCents != 0 ||
		d.Status != "open" || d.ClosedAt != nil || !strings.HasPrefix(d.ID, "del_") {
		t.Errorf("bare deal %+v", d)
	}

	amounts := []int64{100_00, 2_500_00, 333_33, 1_000_000_00, 7}
	var ids []string
	for i, a := range amounts {
		ids = append(ids, s.crmPost(t, admin, "/v1/crm/deals", fmt.Sprintf(`{"title": "Deal %d", "amount_cents": %d}`, i, a)))
	}
	s.wantBoardMatchesDeals(t, admin, p)

	// Moves: figures follow; closed_at through won, lost and reopen.
	move := func(id, stage string) crmDeal {
		t.Helper()
		var out crmDeal
		s.do(t, "PATCH", "/v1/crm/deals/"+id, admin, fmt.Sprintf(`{"stage_id": %q}`, p.stage(t, stage).ID)).want(t, http.StatusOK).decode(t, &out)
		return out
	}
	move(ids[0], "Proposal")
	move(ids[1], "Negotiation")
	s.clock.Advance(time.Hour)
	won := move(ids[2], "Won")
	if won.ClosedAt == nil || *won.ClosedAt != s.clock.Now().UTC().Format(time.RFC3339Nano) || won.Status != "won" {
		t.Errorf("won deal closed_at %v status %s", won.ClosedAt, won.Status)
	}
	s.clock.Advance(time.Hour)
	lost := move(ids[2], "Lost")
	if lost.ClosedAt == nil || *lost.ClosedAt != s.clock.Now().UTC().Format(time.RFC3339Nano) || lost.Status != "lost" {
		t.Errorf("lost deal closed_at %v status %s", lost.ClosedAt, lost.Status)
	}
	reopened := move(ids[2], "Qualified")
	if reopened.ClosedAt != nil || reopened.Status != "open" {
		t.Errorf("reopened deal closed_at %v status %s", reopened.ClosedAt, reopened.Status)
	}
	move(ids[3], "Won")
	s.do(t, "PATCH", "/v1/crm/deals/"+ids[1], admin, `{"amount_cents": 10}`).want(t, http.StatusOK)
	s.do(t, "PATCH", "/v1/crm/deals/"+ids[0], admin, `{"currency": "EUR"}`).want(t, http.StatusOK)
	s.do(t, "DELETE", "/v1/crm/deals/"+ids[4], admin, nil).want(t, http.StatusNoContent)
	s.do(t, "DELETE", "/v1/crm/deals/"+ids[4], admin, nil).want(t, http.StatusNotFound)
	cols := s.wantBoardMatchesDeals(t, admin, p)
	if cols[2].Stage.Name != "Proposal" || len(cols[2].Totals) != 1 || cols[2].Totals[0].Currency != "EUR" {
		t.Errorf("Proposal column %+v", cols[2])
	}
	if got := s.listIDs(t, admin, "/v1/crm/deals?status=won"); !cmp.Equal(got, []string{ids[3]}) {
		t.Errorf("won deals %v", got)
	}
	if won := cols[4]; won.WeightedCents != 1_000_000_00 || won.Count != 1 || len(won.Deals) != 1 || won.Deals[0].ID != ids[3] {
		t.Errorf("Won column %+v", won)
	}

	// A column holds at most ?limit= deals, newest first; its totals cover all.
	for i := range 3 {
		s.clock.Advance(time.Millisecond)
		s.crmPost(t, admin, "/v1/crm/deals", fmt.Sprintf(`{"title": "More %d", "amount_cents": 1}`, i))
	}
	var limited []crmColumn
	s.do(t, "GET", "/v1/crm/pipelines/"+p.ID+"/board?limit=2", admin, nil).want(t, http.StatusOK).decode(t, &limited)
	if lead := limited[0]; len(lead.Deals) != 2 || lead.Count != 4 || lead.Deals[0].Title != "More 2" || lead.Deals[1].Title != "More 1" {
		t.Errorf("Lead column with limit 2: count %d, deals %+v", lead.Count, lead.Deals)
	}
	s.do(t, "GET", "/v1/crm/pipelines/"+p.ID+"/board?limit=0", admin, nil).want(t, http.StatusUnprocessableEntity)
	s.do(t, "GET", "/v1/crm/pipelines/"+p.ID+"/board?limit=201", admin, nil).want(t, http.StatusUnprocessableEntity)

	// Stage probability changes reweigh the column at once.
	s.do(t, "PATCH", "/v1/crm/pipelines/"+p.ID+"/stages/"+p.stage(t, "Negotiation").ID, admin, `{"probability": 50}`).want(t, http.StatusOK)
	p = s.defaultPipeline(t, admin)
	s.wantBoardMatchesDeals(t, admin, p)

	// A stage still holding deals cannot be deleted; an empty one can.
	lead := p.stage(t, "Lead")
	if got := s.do(t, "DELETE", "/v1/crm/pipelines/"+p.ID+"/stages/"+lead.ID, admin, nil).want(t, http.StatusConflict).detail(t); !strings.Contains(got, "holds deals") {
		t.Errorf("detail %q", got)
	}
	s.do(t, "DELETE", "/v1/crm/pipelines/"+p.ID, admin, nil).want(t, http.StatusConflict)
	negotiation := p.stage(t, "Negotiation")
	s.do(t, "PATCH", "/v1/crm/deals/"+ids[1], admin, fmt.Sprintf(`{"stage_id": %q}`, lead.ID)).want(t, http.StatusOK)
	s.do(t, "DELETE", "/v1/crm/pipelines/"+p.ID+"/stages/"+negotiation.ID, admin, nil).want(t, http.StatusNoContent)
	s.do(t, "DELETE", "/v1/crm/pipelines/"+p.ID+"/stages/"+negotiation.ID, admin, nil).want(t, http.StatusNotFound)

	// Add, rename and reorder stages.
	var got crmPipeline
	s.do(t, "POST", "/v1/crm/pipelines/"+p.ID+"/stages", admin, `{"name": "Demo", "probability": 40, "position": 1}`).want(t, http.StatusCreated).decode(t, &got)
	demo := got.stage(t, "Demo")
	s.do(t, "PATCH", "/v1/crm/pipelines/"+p.ID+"/stages/"+demo.ID, admin, `{"name": "Demo call", "position": 3}`).want(t, http.StatusOK).decode(t, &got)
	var order []string
	for _, st := range got.Stages {
		order = append(order, fmt.Sprintf("%d %s", st.Position, st.Name))
	}
	if diff := cmp.Diff([]string{"0 Lead", "1 Qualified", "2 Proposal", "3 Demo call", "4 Won", "5 Lost"}, order); diff != "" {
		t.Errorf("stages after add and move (-want +got):\n%s", diff)
	}
	s.do(t, "PATCH", "/v1/crm/pipelines/"+p.ID+"/stages/"+demo.ID, admin, `{"position": 6}`).want(t, http.StatusUnprocessableEntity)
	s.do(t, "POST", "/v1/crm/pipelines/"+p.ID+"/stages", admin, `{"name": "Far", "position": 7}`).want(t, http.StatusUnprocessableEntity)

	// Another pipeline: a stage of it is refused on a deal of the default
	// one unless pipeline_id moves the deal there.
	other := s.crmPost(t, admin, "/v1/crm/pipelines", `{"name": "Renewals", "stages": [{"name": "Due"}, {"name": "Renewed", "kind": "won"}, {"name": "Churned", "kind": "lost"}]}`)
	var op crmPipeline
	s.do(t, "GET", "/v1/crm/pipelines/"+other, admin, nil).want(t, http.StatusOK).decode(t, &op)
	if renewed := op.stage(t, "Renewed"); renewed.Probability != 100 || op.stage(t, "Due").Probability != 0 {
		t.Errorf("stage probability defaults: %+v", op.Stages)
	}
	r := s.do(t, "PATCH", "/v1/crm/deals/"+ids[1], admin, fmt.Sprintf(`{"stage_id": %q}`, op.stage(t, "Renewed").ID)).want(t, http.StatusUnprocessableEntity)
	if v := violationsOf(t, r); len(v) != 1 || !strings.HasPrefix(v[0], "body.stage_id") {
		t.Errorf("violations %v", v)
	}
	var moved crmDeal
	s.do(t, "PATCH", "/v1/crm/deals/"+ids[1], admin, fmt.Sprintf(`{"pipeline_id": %q}`, other)).want(t, http.StatusOK).decode(t, &moved)
	if moved.PipelineID != other || moved.StageID != op.stage(t, "Due").ID {
		t.Errorf("moved to another pipeline: %+v", moved)
	}
	s.wantBoardMatchesDeals(t, admin, op)
	s.wantBoardMatchesDeals(t, admin, s.defaultPipeline(t, admin))
	// A pipeline's last open stage cannot go; a pipeline without deals can.
	s.do(t, "DELETE", "/v1/crm/pipelines/"+other+"/stages/"+op.stage(t, "Due").ID, admin, nil).want(t, http.StatusConflict)
	s.do(t, "DELETE", "/v1/crm/deals/"+ids[1], admin, nil).want(t, http.StatusNoContent)
	s.do(t, "DELETE", "/v1/crm/pipelines/"+other+"/stages/"+op.stage(t, "Due").ID, admin, nil).want(t, http.StatusConflict)
	s.do(t, "PATCH", "/v1/crm/pipelines/"+other, admin, `{"name": "Renewals 2027"}`).want(t, http.StatusOK)
	s.do(t, "DELETE", "/v1/crm/pipelines/"+other, admin, nil).want(t, http.StatusNoContent)
	s.do(t, "GET", "/v1/crm/pipelines/"+other, admin, nil).want(t, http.StatusNotFound)
	// The default pipeline stays.
	s.do(t, "DELETE", "/v1/crm/pipelines/"+p.ID, admin, nil).want(t, http.StatusConflict)
	// A stage or pipeline that does not exist, on a deal: 422 naming it.
	r = s.do(t, "POST", "/v1/crm/deals", admin, `{"title": "x", "stage_id": "stg_nope", "pipeline_id": "pip_nope"}`).want(t, http.StatusUnprocessableEntity)
	if v := violationsOf(t, r); len(v) != 1 || !strings.HasPrefix(v[0], "body.stage_id") {
		t.Errorf("violations %v", v)
	}
	r = s.do(t, "POST", "/v1/crm/deals", admin, `{"title": "x", "pipeline_id": "pip_nope"}`).want(t, http.StatusUnprocessableEntity)
	if v := violationsOf(t, r); len(v) != 1 || !strings.HasPrefix(v[0], "body.pipeline_id") {
		t.Errorf("violations %v", v)
	}
}

func TestCRMHTTPRecordsAndReferences(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	sess := s.devLogin(t, `{}`)
	admin := sess.Token

	acme := s.crmPost(t, admin, "/v1/crm/companies", `{"name": "ACME Corp", "domain": "acme.test", "industry": "Manufacturing"}`)
	globex := s.crmPost(t, admin, "/v1/crm/companies", fmt.Sprintf(`{"name": "Globex", "owner_id": %q}`, sess.UserID))
	var ana struct {
		ID        string  `json:"id"`
		Lifecycle string  `json:"lifecycle"`
		CompanyID *string `json:"company_id"`
		CreatedAt string  `json:"created_at"`
		UpdatedAt string  `json:"updated_at"`
	}
	s.do(t, "POST", "/v1/crm/contacts", admin, fmt.Sprintf(`{"first_name": "Ana", "last_name": "Lima", "email": "ana@acme.test", "company_id": %q}`, acme)).
		want(t, http.StatusCreated).decode(t, &ana)
	if ana.Lifecycle != "lead" || ana.CompanyID == nil || *ana.CompanyID != acme || ana.CreatedAt == "" || ana.UpdatedAt == "" {
		t.Errorf("contact %+v", ana)
	}
	bob := s.crmPost(t, admin, "/v1/crm/contacts", fmt.Sprintf(`{"first_name": "Bob", "lifecycle": "customer", "company_id": %q}`, globex))
	deal := s.crmPost(t, admin, "/v1/crm/deals", fmt.Sprintf(`{"title": "Anvils", "amount_cents": 50000, "company_id": %q, "contact_id": %q, "owner_id": %q, "expected_close": "2025-06-30T00:00:00Z"}`, acme, ana.ID, sess.UserID))
	deal2 := s.crmPost(t, admin, "/v1/crm/deals", fmt.Sprintf(`{"title": "Rockets", "company_id": %q}`, globex))
	act := s.crmPost(t, admin, "/v1/crm/activities", fmt.Sprintf(`{"kind": "call", "subject": "Intro call", "deal_id": %q, "company_id": %q}`, deal, acme))
	s.clock.Advance(time.Minute)
	act2 := s.crmPost(t, admin, "/v1/crm/activities", fmt.Sprintf(`{"kind": "note", "subject": "Later note", "deal_id": %q}`, deal))
	old := s.crmPost(t, admin, "/v1/crm/activities", fmt.Sprintf(`{"kind": "meeting", "subject": "Kick-off", "deal_id": %q, "occurred_at": "2025-01-01T10:00:00Z"}`, deal))

	// References that do not exist: 422 naming each field, nothing made.
	r := s.do(t, "POST", "/v1/crm/deals", admin, `{"title": "x", "company_id": "cmp_nope", "contact_id": "con_nope", "owner_id": "usr_nope", "stage_id": "stg_nope"}`).
		want(t, http.StatusUnprocessableEntity)
	if v := violationsOf(t, r); len(v) != 1 || !strings.HasPrefix(v[0], "body.owner_id") {
		t.Errorf("owner violations %v", v)
	}
	r = s.do(t, "POST", "/v1/crm/deals", admin, `{"title": "x", "company_id": "cmp_nope", "contact_id": "con_nope"}`).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body.company_id:value_error", "body.contact_id:value_error"}, sortedViolations(t, r)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
	r = s.do(t, "POST", "/v1/crm/contacts", admin, `{"first_name": "x", "company_id": "cmp_nope"}`).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body.company_id:value_error"}, sortedViolations(t, r)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
	r = s.do(t, "POST", "/v1/crm/activities", admin, `{"kind": "note", "subject": "x", "deal_id": "del_nope"}`).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body.deal_id:value_error"}, sortedViolations(t, r)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
	// An activity's own field named body is located at body.body.
	r = s.do(t, "POST", "/v1/crm/activities", admin, fmt.Sprintf(`{"kind": "note", "subject": "x", "body": %q}`, strings.Repeat("a", 20001))).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"body.body:string_too_long"}, sortedViolations(t, r)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
	s.do(t, "PATCH", "/v1/crm/deals/"+deal, admin, `{"contact_id": "con_nope"}`).want(t, http.StatusUnprocessableEntity)
	s.do(t, "PATCH", "/v1/crm/companies/"+acme, admin, `{"owner_id": "usr_nope"}`).want(t, http.StatusUnprocessableEntity)

	// Lists filter from indexes.
	for _, test := range []struct {
		path string
		want []string
	}{
		{"/v1/crm/companies", []string{globex, acme}},
		{"/v1/crm/companies?owner_id=" + sess.UserID, []string{globex}},
		{"/v1/crm/companies?q=ac", []string{acme}},
		{"/v1/crm/companies?q=ACME%20c", []string{acme}},
		{"/v1/crm/companies?q=acme.t", []string{acme}},
		{"/v1/crm/companies?q=corp", []string{}},
		{"/v1/crm/contacts", []string{bob, ana.ID}},
		{"/v1/crm/contacts?company_id=" + acme, []string{ana.ID}},
		{"/v1/crm/contacts?lifecycle=customer", []string{bob}},
		{"/v1/crm/contacts?lifecycle=lead", []string{ana.ID}},
		{"/v1/crm/contacts?q=ana", []string{ana.ID}},
		{"/v1/crm/contacts?q=lima", []string{ana.ID}},
		{"/v1/crm/contacts?q=ana%20li", []string{ana.ID}},
		{"/v1/crm/contacts?q=ana@", []string{ana.ID}},
		{"/v1/crm/contacts?q=b", []string{bob}},
		{"/v1/crm/deals?company_id=" + acme, []string{deal}},
		{"/v1/crm/deals?contact_id=" + ana.ID, []string{deal}},
		{"/v1/crm/deals?owner_id=" + sess.UserID, []string{deal}},
		{"/v1/crm/deals?q=rock", []string{deal2}},
		{"/v1/crm/deals?q=r", []string{deal2}},
		{"/v1/crm/deals?q=zz", []string{}},
		{"/v1/crm/deals?status=open", []string{deal2, deal}},
		{"/v1/crm/deals?status=won", []string{}},
		{"/v1/crm/deals?status=open&owner_id=" + sess.UserID, []string{deal}},
		{"/v1/crm/activities", []string{act2, act, old}},
		{"/v1/crm/activities?deal_id=" + deal, []string{act2, act, old}},
		{"/v1/crm/activities?company_id=" + acme, []string{act}},
	} {
		if diff := cmp.Diff(test.want, s.listIDs(t, admin, test.path)); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", test.path, diff)
		}
	}
	p := s.defaultPipeline(t, admin)
	lead := p.stage(t, "Lead").ID
	for _, path := range []string{"/v1/crm/deals?stage_id=" + lead, "/v1/crm/deals?pipeline_id=" + p.ID} {
		if diff := cmp.Diff([]string{deal2, deal}, s.listIDs(t, admin, path)); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", path, diff)
		}
	}
	for _, path := range []string{"/v1/crm/deals?stage_id=" + lead + "&owner_id=" + sess.UserID, "/v1/crm/deals?owner_id=" + sess.UserID + "&pipeline_id=" + p.ID} {
		if diff := cmp.Diff([]string{deal}, s.listIDs(t, admin, path)); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", path, diff)
		}
	}
	// Paging with cursors, and filters that do not combine.
	if got := s.pages(t, admin, "/v1/crm/activities?limit=2"); len(got) != 2 || len(got[0]) != 2 || got[1][0] != old {
		t.Errorf("pages %v", got)
	}
	if got := s.pages(t, admin, "/v1/crm/contacts?q=a&limit=1"); len(got) != 1 {
		t.Errorf("pages %v", got)
	}
	r = s.do(t, "GET", "/v1/crm/deals?company_id="+acme+"&q=a", admin, nil).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"query:value_error"}, sortedViolations(t, r)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
	s.do(t, "GET", "/v1/crm/contacts?q="+url.QueryEscape(strings.Repeat("a", 101)), admin, nil).want(t, http.StatusUnprocessableEntity)
	s.do(t, "GET", "/v1/crm/contacts?q="+url.QueryEscape(strings.Repeat("a", 100)), admin, nil).want(t, http.StatusOK)
	s.do(t, "GET", "/v1/crm/deals?cursor=%25%25", admin, nil).want(t, http.StatusUnprocessableEntity)
	r = s.do(t, "GET", "/v1/crm/deals?status=closed", admin, nil).want(t, http.StatusUnprocessableEntity)
	if diff := cmp.Diff([]string{"query.status:enum"}, sortedViolations(t, r)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}

	// PATCH: only the fields given; null clears.
	var c struct {
		Name     string  `json:"name"`
		Domain   *string `json:"domain"`
		Industry *string `json:"industry"`
	}
	s.do(t, "PATCH", "/v1/crm/companies/"+acme, admin, `{"domain": null, "name": "ACME Inc"}`).want(t, http.StatusOK).decode(t, &c)
	if c.Name != "ACME Inc" || c.Domain != nil || c.Industry == nil || *c.Industry != "Manufacturing" {
		t.Errorf("patched company %+v", c)
	}
	if got := s.listIDs(t, admin, "/v1/crm/companies?q=acme.test"); len(got) != 0 {
		t.Errorf("the cleared domain still matches: %v", got)
	}
	var dl crmDeal
	s.do(t, "PATCH", "/v1/crm/deals/"+deal, admin, `{"expected_close": null, "owner_id": null}`).want(t, http.StatusOK).decode(t, &dl)
	if dl.ExpectedClose != nil || dl.OwnerID != nil || dl.Title != "Anvils" || dl.AmountCents != 50000 {
		t.Errorf("patched deal %+v", dl)
	}

	// Deleting a company unlinks its contacts, deals and activities.
	s.do(t, "DELETE", "/v1/crm/companies/"+acme, admin, nil).want(t, http.StatusNoContent)
	s.do(t, "GET", "/v1/crm/companies/"+acme, admin, nil).want(t, http.StatusNotFound)
	s.do(t, "DELETE", "/v1/crm/companies/"+acme, admin, nil).want(t, http.StatusNotFound)
	if d := s.deal(t, admin, deal); d.CompanyID != nil || d.ContactID == nil {
		t.Errorf("deal after its company was deleted: %+v", d)
	}
	s.do(t, "GET", "/v1/crm/contacts/"+ana.ID, admin, nil).want(t, http.StatusOK).decode(t, &ana)
	if ana.CompanyID != nil {
		t.Errorf("contact still at company %s", *ana.CompanyID)
	}
	for _, path := range []string{"/v1/crm/contacts?company_id=" + acme, "/v1/crm/deals?company_id=" + acme, "/v1/crm/activities?company_id=" + acme} {
		if got := s.listIDs(t, admin, path); len(got) != 0 {
			t.Errorf("GET %s: %v", path, got)
		}
	}
	// Deleting a contact unlinks its deals.
	s.do(t, "DELETE", "/v1/crm/contacts/"+ana.ID, admin, nil).want(t, http.StatusNoContent)
	if d := s.deal(t, admin, deal); d.ContactID != nil {
		t.Errorf("deal after its contact was deleted: %+v", d)
	}
	// Deleting a deal unlinks its activities.
	s.do(t, "DELETE", "/v1/crm/deals/"+deal, admin, nil).want(t, http.StatusNoContent)
	var a struct {
		DealID *string `json:"deal_id"`
	}
	s.do(t, "GET", "/v1/crm/activities/"+act, admin, nil).want(t, http.StatusOK).decode(t, &a)
	if a.DealID != nil {
		t.Errorf("activity still on deal %s", *a.DealID)
	}
	s.do(t, "PATCH", "/v1/crm/activities/"+act, admin, `{"subject": "Intro call (moved)", "kind": "meeting"}`).want(t, http.StatusOK)
	s.do(t, "DELETE", "/v1/crm/activities/"+act, admin, nil).want(t, http.StatusNoContent)
	s.do(t, "GET", "/v1/crm/activities/"+act, admin, nil).want(t, http.StatusNotFound)
}

// TestCRMHTTPBounds: every bound of interface.md section 8 for the CRM
// records, just inside (accepted) and just outside (422 at the field), on
// create and on PATCH.
func TestCRMHTTPBounds(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	company := s.crmPost(t, admin, "/v1/crm/companies", `{"name": "c"}`)
	contact := s.crmPost(t, admin, "/v1/crm/contacts", `{"first_name": "c"}`)
	deal := s.crmPost(t, admin, "/v1/crm/deals", `{"title": "d"}`)
	activity := s.crmPost(t, admin, "/v1/crm/activities", `{"kind": "note", "subject": "s"}`)
	str := func(n int) string { return `"` + strings.Repeat("é", n) + `"` }
	for _, test := range []struct {
		name, method, path string
		body               string
		want               []string // violations, none when accepted
	}{
		{"company name 1", "POST", "/v1/crm/companies", `{"name": ` + str(1) + `}`, nil},
		{"company name 200", "POST", "/v1/crm/companies", `{"name": ` + str(200) + `}`, nil},
		{"company name 0", "POST", "/v1/crm/companies", `{"name": ""}`, []string{"body.name:string_too_short"}},
		{"company name blank", "POST", "/v1/crm/companies", `{"name": "  "}`, []string{"body.name:string_too_short"}},
		{"company name 201", "POST", "/v1/crm/companies", `{"name": ` + str(201) + `}`, []string{"body.name:string_too_long"}},
		{"company name missing", "POST", "/v1/crm/companies", `{}`, []string{"body.name:missing"}},
		{"company patch name 200", "PATCH", "/v1/crm/companies/" + company, `{"name": ` + str(200) + `}`, nil},
		{"company patch name 201", "PATCH", "/v1/crm/companies/" + company, `{"name": ` + str(201) + `}`, []string{"body.name:string_too_long"}},
		{"company patch name 0", "PATCH", "/v1/crm/companies/" + company, `{"name": ""}`, []string{"body.name:string_too_short"}},
		{"contact first_name 1", "POST", "/v1/crm/contacts", `{"first_name": ` + str(1) + `}`, nil},
		{"contact first_name 100", "POST", "/v1/crm/contacts", `{"first_name": ` + str(100) + `}`, nil},
		{"contact first_name 0", "POST", "/v1/crm/contacts", `{"first_name": ""}`, []string{"body.first_name:string_too_short"}},
		{"contact first_name 101", "POST", "/v1/crm/contacts", `{"first_name": ` + str(101) + `}`, []string{"body.first_name:string_too_long"}},
		{"contact patch first_name 100", "PATCH", "/v1/crm/contacts/" + contact, `{"first_name": ` + str(100) + `}`, nil},
		{"contact patch first_name 101", "PATCH", "/v1/crm/contacts/" + contact, `{"first_name": ` + str(101) + `}`, []string{"body.first_name:string_too_long"}},
		{"contact patch first_name 0", "PATCH", "/v1/crm/contacts/" + contact, `{"first_name": ""}`, []string{"body.first_name:string_too_short"}},
		{"contact email bad", "POST", "/v1/crm/contacts", `{"first_name": "a", "email": "not-an-address"}`, []string{"body.email:value_error"}},
		{"contact lifecycle bad", "POST", "/v1/crm/contacts", `{"first_name": "a", "lifecycle": "Big Fish"}`, []string{"body.lifecycle:string_pattern_mismatch"}},
		{"deal title 1", "POST", "/v1/crm/deals", `{"title": ` + str(1) + `}`, nil},
		{"deal title 200", "POST", "/v1/crm/deals", `{"title": ` + str(200) + `}`, nil},
		{"deal title 0", "POST", "/v1/crm/deals", `{"title": ""}`, []string{"body.title:string_too_short"}},
		{"deal title 201", "POST", "/v1/crm/deals", `{"title": ` + str(201) + `}`, []string{"body.title:string_too_long"}},
		{"deal amount 0", "POST", "/v1/crm/deals", `{"title": "a", "amount_cents": 0}`, nil},
		{"deal amount -1", "POST", "/v1/crm/deals", `{"title": "a", "amount_cents": -1}`, []string{"body.amount_cents:greater_than_equal"}},
		{"deal amount max", "POST", "/v1/crm/deals", `{"title": "b", "amount_cents": 1000000000000000}`, nil},
		{"deal amount over max", "POST", "/v1/crm/deals", `{"title": "b", "amount_cents": 1000000000000001}`, []string{"body.amount_cents:less_than_equal"}},
		{"deal amount not integer", "POST", "/v1/crm/deals", `{"title": "a", "amount_cents": 1.5}`, []string{"body.amount_cents:type_error"}},
		{"deal currency lower", "POST", "/v1/crm/deals", `{"title": "a", "currency": "usd"}`, []string{"body.currency:string_pattern_mismatch"}},
		{"deal patch title 200", "PATCH", "/v1/crm/deals/" + deal, `{"title": ` + str(200) + `}`, nil},
		{"deal patch title 201", "PATCH", "/v1/crm/deals/" + deal, `{"title": ` + str(201) + `}`, []string{"body.title:string_too_long"}},
		{"deal patch title 0", "PATCH", "/v1/crm/deals/" + deal, `{"title": ""}`, []string{"body.title:string_too_short"}},
		{"deal patch amount 0", "PATCH", "/v1/crm/deals/" + deal, `{"amount_cents": 0}`, nil},
		{"deal patch amount -1", "PATCH", "/v1/crm/deals/" + deal, `{"amount_cents": -1}`, []string{"body.amount_cents:greater_than_equal"}},
		{"activity subject 1", "POST", "/v1/crm/activities", `{"kind": "call", "subject": ` + str(1) + `}`, nil},
		{"activity subject 300", "POST", "/v1/crm/activities", `{"kind": "email", "subject": ` + str(300) + `}`, nil},
		{"activity subject 0", "POST", "/v1/crm/activities", `{"kind": "meeting", "subject": ""}`, []string{"body.subject:string_too_short"}},
		{"activity subject 301", "POST", "/v1/crm/activities", `{"kind": "task", "subject": ` + str(301) + `}`, []string{"body.subject:string_too_long"}},
		{"activity kind", "POST", "/v1/crm/activities", `{"kind": "lunch", "subject": "a"}`, []string{"body.kind:enum"}},
		{"activity missing", "POST", "/v1/crm/activities", `{}`, []string{"body.kind:missing", "body.subject:missing"}},
		{"activity patch subject 300", "PATCH", "/v1/crm/activities/" + activity, `{"subject": ` + str(300) + `}`, nil},
		{"activity patch subject 301", "PATCH", "/v1/crm/activities/" + activity, `{"subject": ` + str(301) + `}`, []string{"body.subject:string_too_long"}},
		{"all at once", "POST", "/v1/crm/deals", `{"title": "", "amount_cents": -1, "currency": "x"}`,
			[]string{"body.amount_cents:greater_than_equal", "body.currency:string_pattern_mismatch", "body.title:string_too_short"}},
		{"pipeline no stages", "POST", "/v1/crm/pipelines", `{"name": "p", "stages": []}`, []string{"body.stages:too_short"}},
		{"pipeline no open stage", "POST", "/v1/crm/pipelines", `{"name": "p", "stages": [{"name": "w", "kind": "won"}]}`, []string{"body.stages:value_error"}},
		{"stage probability 100", "POST", "/v1/crm/pipelines", `{"name": "p", "stages": [{"name": "a", "probability": 100}]}`, nil},
		{"stage probability 101", "POST", "/v1/crm/pipelines", `{"name": "p", "stages": [{"name": "a", "probability": 101}]}`, []string{"body.stages.0.probability:less_than_equal"}},
		{"stage probability -1", "POST", "/v1/crm/pipelines", `{"name": "p", "stages": [{"name": "a", "probability": -1}]}`, []string{"body.stages.0.probability:greater_than_equal"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			r := s.do(t, test.method, test.path, admin, test.body)
			if test.want == nil {
				if r.Status != http.StatusOK && r.Status != http.StatusCreated {
					t.Fatalf("status %d: %s", r.Status, r.Body)
				}
				return
			}
			r.want(t, http.StatusUnprocessableEntity)
			if diff := cmp.Diff(test.want, sortedViolations(t, r)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
	// Nothing refused was made.
	if got := s.listIDs(t, admin, "/v1/crm/deals?q=a"); len(got) != 1 { // "deal amount 0"
		t.Errorf("deals titled a: %v", got)
	}
}

func TestCRMHTTPPermissionsAndApps(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	viewer := s.newKey(t, admin, `{"name": "viewer", "roles": ["viewer"]}`).Secret
	member := s.newKey(t, admin, `{"name": "member", "roles": ["member"]}`).Secret
	docsOnly := s.newKey(t, admin, `{"name": "docs", "apps": ["docs"]}`).Secret
	s.do(t, "GET", "/v1/crm/deals", viewer, nil).want(t, http.StatusOK)
	if got := s.do(t, "POST", "/v1/crm/deals", viewer, `{"title": "x"}`).want(t, http.StatusForbidden).detail(t); got != "missing permission crm.write" {
		t.Errorf("detail %q", got)
	}
	s.do(t, "POST", "/v1/crm/deals", member, `{"title": "x"}`).want(t, http.StatusCreated)
	s.do(t, "GET", "/v1/crm/pipelines", docsOnly, nil).want(t, http.StatusForbidden)
	s.do(t, "GET", "/v1/crm/companies", "", nil).want(t, http.StatusUnauthorized)

	var apps []struct {
		ID     string `json:"id"`
		Events struct {
			Emits []string `json:"emits"`
		} `json:"events"`
		Capabilities []string `json:"capabilities"`
	}
	s.do(t, "GET", "/v1/apps", admin, nil).want(t, http.StatusOK).decode(t, &apps)
	i := slices.IndexFunc(apps, func(a struct {
		ID     string `json:"id"`
		Events struct {
			Emits []string `json:"emits"`
		} `json:"events"`
		Capabilities []string `json:"capabilities"`
	}) bool {
		return a.ID == "crm"
	})
	if i < 0 {
		t.Fatal("no crm app")
	}
	want := []string{"crm.company.created", "crm.contact.created", "crm.deal.created", "crm.deal.stage_changed", "crm.deal.won", "crm.deal.lost", "crm.activity.logged"}
	if diff := cmp.Diff(want, apps[i].Events.Emits); diff != "" {
		t.Errorf("crm events (-want +got):\n%s", diff)
	}
	if !slices.Contains(apps[i].Capabilities, "crm.deal.move") {
		t.Errorf("crm capabilities %v", apps[i].Capabilities)
	}
	// The crm.* capabilities are filled: none is a gap.
	var caps []struct {
		ID       string  `json:"id"`
		Provider *string `json:"default_provider"`
	}
	s.do(t, "GET", "/v1/capabilities", admin, nil).want(t, http.StatusOK).decode(t, &caps)
	n := 0
	for _, c := range caps {
		if strings.HasPrefix(c.ID, "crm.") {
			n++
			if c.Provider == nil || *c.Provider != "builtin.crm" {
				t.Errorf("%s is filled by %v", c.ID, c.Provider)
			}
		}
	}
	if n != 7 {
		t.Errorf("%d crm capabilities", n)
	}
}

// TestCRMDealWonTriggersProcess: a process triggered by crm.deal.won with
// a filter on amount_cents starts for large won deals only, and its step
// logs an activity on the deal through crm.activity.log.
func TestCRMDealWonTriggersProcess(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	p := s.defaultPipeline(t, admin)
	won := p.stage(t, "Won").ID
	proc := s.createProc(t, admin, `{
	  "name": "Thank large customers", "function": "sales",
	  "trigger": {"type": "event", "event": "crm.deal.won", "filter": {"amount_cents": {"gte": 1000000}}},
	  "steps": [{"key": "log", "type": "execute", "capability": "crm.activity.log",
	             "config": {"args": {"type": "task", "subject": "Send a thank-you for ${trigger.data.title}",
	                                 "deal_id": "${trigger.data.deal_id}"}}}]
	}`)
	small := s.crmPost(t, admin, "/v1/crm/deals", `{"title": "Small", "amount_cents": 999999}`)
	big := s.crmPost(t, admin, "/v1/crm/deals", `{"title": "Big", "amount_cents": 1000000}`)
	// Not for this one: too small. (The clock moves between changes so the
	// events' ids, and so their dispatch, are in order.)
	s.do(t, "PATCH", "/v1/crm/deals/"+small, admin, fmt.Sprintf(`{"stage_id": %q}`, won)).want(t, http.StatusOK)
	s.clock.Advance(time.Millisecond)
	// Moving within open stages is not a win.
	s.do(t, "PATCH", "/v1/crm/deals/"+big, admin, fmt.Sprintf(`{"stage_id": %q}`, p.stage(t, "Proposal").ID)).want(t, http.StatusOK)
	s.clock.Advance(time.Millisecond)
	s.do(t, "PATCH", "/v1/crm/deals/"+big, admin, fmt.Sprintf(`{"stage_id": %q}`, won)).want(t, http.StatusOK)
	var runs []runView
	s.awaitRuns(t, admin, "/v1/process-runs?process_id="+proc.ID, 1, &runs)
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	run := s.awaitRun(t, admin, runs[0].ID, "waiting or completed", func(r runView) bool { return r.Status == "waiting" || r.Status == "completed" })
	if st := run.step(t, "log"); st.ApprovalID != nil {
		s.do(t, "POST", "/v1/approvals/"+*st.ApprovalID+"/approve", admin, `{}`).want(t, http.StatusOK)
	}
	run = s.awaitRun(t, admin, runs[0].ID, "completed", runStatusIs("completed"))
	out, _ := run.step(t, "log").Output.(map[string]any)
	actID, _ := out["activity_id"].(string)
	var act struct {
		Kind    string  `json:"kind"`
		Subject string  `json:"subject"`
		DealID  *string `json:"deal_id"`
	}
	s.do(t, "GET", "/v1/crm/activities/"+actID, admin, nil).want(t, http.StatusOK).decode(t, &act)
	if act.Kind != "task" || act.Subject != "Send a thank-you for Big" || act.DealID == nil || *act.DealID != big {
		t.Errorf("activity %+v", act)
	}
	if got := s.listIDs(t, admin, "/v1/crm/activities?deal_id="+big); len(got) != 1 || got[0] != actID {
		t.Errorf("the big deal's activities: %v", got)
	}
	if got := s.listIDs(t, admin, "/v1/crm/activities?deal_id="+small); len(got) != 0 {
		t.Errorf("the small deal's activities: %v", got)
	}
}

// TestCRMProcessMovesDeal: a process step moves a deal through
// crm.deal.move by stage name, end to end, and a second step reads the
// move's result.
func TestCRMProcessMovesDeal(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	p := s.defaultPipeline(t, admin)
	deal := s.crmPost(t, admin, "/v1/crm/deals", `{"title": "Springs", "amount_cents": 4200}`)
	proc := s.createProc(t, admin, `{
	  "name": "Close a deal", "function": "sales", "trigger": {"type": "manual"},
	  "steps": [{"key": "move", "type": "execute", "capability": "crm.deal.move",
	             "config": {"args": {"deal_id": "${subject.label}", "stage_name": "won"}}},
	            {"key": "note", "type": "execute", "capability": "crm.activity.log",
	             "config": {"args": {"subject": "Closed from ${steps.move.from_stage_id}", "deal_id": "${steps.move.deal_id}"}}}]
	}`)
	run := s.startRun(t, admin, proc.ID, deal)
	// The workspace is supervised: each execute step may wait for a person.
	for _, key := range []string{"move", "note"} {
		run = s.awaitRun(t, admin, run.ID, key+" waiting or done", func(r runView) bool {
			st := r.step(t, key)
			return st.Status == "waiting_approval" || st.Status == "completed"
		})
		if st := run.step(t, key); st.Status == "waiting_approval" {
			s.do(t, "POST", "/v1/approvals/"+*st.ApprovalID+"/approve", admin, `{}`).want(t, http.StatusOK)
		}
	}
	run = s.awaitRun(t, admin, run.ID, "completed", runStatusIs("completed"))
	d := s.deal(t, admin, deal)
	if d.StageID != p.stage(t, "Won").ID || d.Status != "won" || d.ClosedAt == nil {
		t.Errorf("deal after the process: %+v", d)
	}
	var acts []struct {
		Subject string `json:"subject"`
	}
	s.do(t, "GET", "/v1/crm/activities?deal_id="+deal, admin, nil).want(t, http.StatusOK).decode(t, &acts)
	if len(acts) != 1 || acts[0].Subject != "Closed from "+p.stage(t, "Lead").ID {
		t.Errorf("activities %+v", acts)
	}
	if won := s.board(t, admin, p.ID)[4]; won.Count != 1 || won.TotalCents != 4200 {
		t.Errorf("Won column %+v", won)
	}
}

// TestCRMHTTPIdempotentCreate: a create retried with the same
// Idempotency-Key makes one deal and one set of counters.
func TestCRMHTTPIdempotentCreate(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, httpapi.Options{DevLogin: true})
	admin := s.devLogin(t, `{}`).Token
	var first, second crmDeal
	body := `{"title": "Once", "amount_cents": 900}`
	s.do(t, "POST", "/v1/crm/deals", admin, body, "Idempotency-Key", "k1").want(t, http.StatusCreated).decode(t, &first)
	s.do(t, "POST", "/v1/crm/deals", admin, body, "Idempotency-Key", "k1").want(t, http.StatusCreated).decode(t, &second)
	if first.ID == "" || first.ID != second.ID {
		t.Errorf("a retry made %s and %s", first.ID, second.ID)
	}
	s.do(t, "POST", "/v1/crm/deals", admin, `{"title": "Other"}`, "Idempotency-Key", "k1").want(t, http.StatusConflict)
	if lead := s.board(t, admin, first.PipelineID)[0]; lead.Count != 1 || lead.TotalCents != 900 {
		t.Errorf("Lead column %+v", lead)
	}
}
