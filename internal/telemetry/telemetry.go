// Package telemetry is the workspace's metrics (Prometheus, the bas_...
// series) and traces (OpenTelemetry): the run engine's Observer, the
// capability registry's CallObserver and the HTTP layer's request hook.
// Either half may be off; the workspace wires none of it when both are.
//
// # Spans
//
// A run has a span ("run <process name>") from its start to its end; each
// step a child span ("step <key>") from its start to its end; each
// provider call a child of its step's span ("call <capability>", kind
// client), whose context the plugin host sends on to plugins. An API
// request has a server span named by its route pattern ("GET
// /v1/process-runs/:id"). Attributes: bas.tenant, bas.run_id,
// bas.process_id, bas.step, bas.step_type, bas.provider, bas.capability,
// bas.request_id, http.route, http.response.status_code.
//
// Run and step spans stay open in memory while their run waits (a person,
// a timer): a workspace restarted meanwhile starts them again when they
// move, and ends the spans of steps begun before it never.
package telemetry

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/runengine"
	"github.com/cockroachdb/errors"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Telemetry is the workspace's metrics and traces. Create it with New.
type Telemetry struct {
	m  *metrics     // nil when Options.Metrics is nil
	tr trace.Tracer // nil when Options.TracerProvider is nil

	mu    sync.Mutex
	runs  map[string]trace.Span // run id -> open run span
	steps map[string]trace.Span // run id + "/" + step key -> open step span
}

// metrics are the bas_... series.
type metrics struct {
	runsStarted     *prometheus.CounterVec
	runsFinished    *prometheus.CounterVec
	stepDuration    *prometheus.HistogramVec
	callDuration    *prometheus.HistogramVec
	callErrors      *prometheus.CounterVec
	pluginRestarts  *prometheus.CounterVec
	webhooks        *prometheus.CounterVec
	httpRequests    *prometheus.CounterVec
	httpDuration    *prometheus.HistogramVec
	commitDuration  prometheus.Histogram
	commitBatch     prometheus.Histogram
	commitErrors    prometheus.Counter
	openTasks       *prometheus.Desc
	pendingApproval *prometheus.Desc
	overdueRuns     *prometheus.Desc

	gauges func(ctx context.Context) (runengine.Gauges, error)

	// The series of label values seen, so the hot path hashes no labels.
	series sync.Map // seriesKey -> prometheus.Counter or prometheus.Observer
}

// seriesKey names one series of one vector.
type seriesKey struct {
	vec  any
	a, b string
}

// counter returns vec's counter for labels (one or two values), cached.
func (m *metrics) counter(vec *prometheus.CounterVec, a, b string, two bool) prometheus.Counter {
	k := seriesKey{vec, a, b}
	if c, ok := m.series.Load(k); ok {
		return c.(prometheus.Counter)
	}
	var c prometheus.Counter
	if two {
		c = vec.WithLabelValues(a, b)
	} else {
		c = vec.WithLabelValues(a)
	}
	m.series.Store(k, c)
	return c
}

// observer returns vec's observer for labels (one or two values), cached.
func (m *metrics) observer(vec *prometheus.HistogramVec, a, b string, two bool) prometheus.Observer {
	k := seriesKey{vec, a, b}
	if o, ok := m.series.Load(k); ok {
		return o.(prometheus.Observer)
	}
	var o prometheus.Observer
	if two {
		o = vec.WithLabelValues(a, b)
	} else {
		o = vec.WithLabelValues(a)
	}
	m.series.Store(k, o)
	return o
}

// Config configures New.
type Config struct {
	// Metrics receives the bas_... series; nil leaves metrics off.
	Metrics prometheus.Registerer
	// TracerProvider makes the spans; nil leaves tracing off.
	TracerProvider trace.TracerProvider
	// Gauges, when set, sums the open tasks, pending approvals and
	// overdue runs of every workspace at scrape time.
	Gauges func(ctx context.Context) (runengine.Gauges, error)
}

// New returns the telemetry of cfg, or nil when both halves are off.
func New(cfg Config) (*Telemetry, error) {
	if cfg.Metrics == nil && cfg.TracerProvider == nil {
		return nil, nil
	}
	t := &Telemetry{runs: map[string]trace.Span{}, steps: map[string]trace.Span{}}
	switch cfg.TracerProvider.(type) {
	case nil, noop.TracerProvider, *noop.TracerProvider:
		// None, or one that records nothing: no span is started, so it
		// costs nothing per request, step and call.
	default:
		t.tr = cfg.TracerProvider.Tracer("github.com/bas-platform/bas")
	}
	if cfg.Metrics != nil {
		m, err := newMetrics(cfg.Metrics)
		if err != nil {
			return nil, err
		}
		m.gauges = cfg.Gauges
		t.m = m
	}
	return t, nil
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		runsStarted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bas_runs_started_total",
			Help: "Runs started, by process."}, []string{"process_id"}),
		runsFinished: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bas_runs_finished_total",
			Help: "Runs ended, by process and status (completed, failed, rejected, cancelled)."}, []string{"process_id", "status"}),
		stepDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "bas_step_duration_seconds",
			Help: "Time from a step's start to its end, by step type and status.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 12)},
			[]string{"type", "status"}),
		callDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "bas_provider_call_duration_seconds",
			Help: "Provider call latency, by provider.", Buckets: prometheus.DefBuckets}, []string{"provider"}),
		callErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bas_provider_call_errors_total",
			Help: "Provider calls that failed, by provider."}, []string{"provider"}),
		pluginRestarts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bas_plugin_restarts_total",
			Help: "Plugin processes restarted after a crash, by provider."}, []string{"provider"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bas_webhook_deliveries_total",
			Help: "Webhook delivery attempts, by outcome (succeeded, retrying, failed)."}, []string{"outcome"}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bas_http_requests_total",
			Help: "API requests, by method, route pattern and status."}, []string{"method", "route", "status"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "bas_http_request_duration_seconds",
			Help: "API request latency, by method and route pattern.", Buckets: prometheus.DefBuckets}, []string{"method", "route"}),
		commitDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bas_store_commit_duration_seconds",
			Help: "Latency of the run engine's group commits.", Buckets: prometheus.ExponentialBuckets(0.0001, 3, 12)}),
		commitBatch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bas_store_commit_batch_size",
			Help: "Changes carried by one group commit.", Buckets: prometheus.ExponentialBuckets(1, 4, 7)}),
		commitErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "bas_store_commit_errors_total",
			Help: "Group commits that failed."}),
		openTasks:       prometheus.NewDesc("bas_open_tasks", "Open human tasks, over every workspace.", nil, nil),
		pendingApproval: prometheus.NewDesc("bas_pending_approvals", "Pending approvals, over every workspace.", nil, nil),
		overdueRuns:     prometheus.NewDesc("bas_overdue_runs", "Runs past a step's SLA, over every workspace.", nil, nil),
	}
	for _, c := range []prometheus.Collector{m.runsStarted, m.runsFinished, m.stepDuration, m.callDuration, m.callErrors,
		m.pluginRestarts, m.webhooks, m.httpRequests, m.httpDuration, m.commitDuration, m.commitBatch, m.commitErrors, gaugeCollector{m}} {
		if err := reg.Register(c); err != nil {
			return nil, errors.WithHint(errors.Wrap(err, "register bas metrics"),
				"give each workspace its own prometheus.Registry (or wrap one with prometheus.WrapRegistererWith)")
		}
	}
	return m, nil
}

// gaugeCollector reads the gauges at scrape time from the engine's
// counters, summed over workspaces (one read per workspace).
type gaugeCollector struct{ m *metrics }

func (g gaugeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.m.openTasks
	ch <- g.m.pendingApproval
	ch <- g.m.overdueRuns
}

func (g gaugeCollector) Collect(ch chan<- prometheus.Metric) {
	if g.m.gauges == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sum, err := g.m.gauges(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(g.m.openTasks, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(g.m.openTasks, prometheus.GaugeValue, float64(sum.OpenTasks))
	ch <- prometheus.MustNewConstMetric(g.m.pendingApproval, prometheus.GaugeValue, float64(sum.PendingApprovals))
	ch <- prometheus.MustNewConstMetric(g.m.overdueRuns, prometheus.GaugeValue, float64(sum.OverdueRuns))
}

var _ runengine.Observer = (*Telemetry)(nil)
var _ capability.CallObserver = (*Telemetry)(nil)

func runAttrs(r runengine.RunNote) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("bas.tenant", r.Tenant), attribute.String("bas.run_id", r.RunID),
		attribute.String("bas.process_id", r.ProcessID)}
}

// runSpan returns the open span of a run, starting it (at the run's start)
// when there is none; t.mu is held.
func (t *Telemetry) runSpan(r runengine.RunNote) trace.Span {
	if sp, ok := t.runs[r.RunID]; ok {
		return sp
	}
	_, sp := t.tr.Start(context.Background(), "run "+r.ProcessName, trace.WithTimestamp(r.StartedAt))
	if !sp.IsRecording() {
		return sp // a no-op or unsampled tracer: nothing to keep
	}
	sp.SetAttributes(runAttrs(r)...)
	sp.SetAttributes(attribute.String("bas.process_name", r.ProcessName))
	t.runs[r.RunID] = sp
	return sp
}

// RunStarted counts the run and opens its span.
func (t *Telemetry) RunStarted(r runengine.RunNote) {
	if t.m != nil {
		t.m.counter(t.m.runsStarted, r.ProcessID, "", false).Inc()
	}
	if t.tr != nil {
		t.mu.Lock()
		t.runSpan(r)
		t.mu.Unlock()
	}
}

// RunFinished counts the run's end and ends its span.
func (t *Telemetry) RunFinished(r runengine.RunNote, status runengine.RunStatus) {
	if t.m != nil {
		t.m.counter(t.m.runsFinished, r.ProcessID, string(status), true).Inc()
	}
	if t.tr == nil {
		return
	}
	t.mu.Lock()
	sp := t.runSpan(r)
	delete(t.runs, r.RunID)
	t.mu.Unlock()
	sp.SetAttributes(attribute.String("bas.status", string(status)))
	if status != runengine.RunCompleted {
		sp.SetStatus(codes.Error, string(status))
	}
	sp.End()
}

// StepStarted opens the step's span under its run's.
func (t *Telemetry) StepStarted(s runengine.StepNote) {
	if t.tr == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	parent := trace.ContextWithSpan(context.Background(), t.runSpan(s.RunNote))
	start := s.StartedAt
	if start.IsZero() {
		start = time.Now()
	}
	_, sp := t.tr.Start(parent, "step "+s.StepKey, trace.WithTimestamp(start))
	if !sp.IsRecording() {
		return
	}
	sp.SetAttributes(runAttrs(s.RunNote)...)
	sp.SetAttributes(attribute.String("bas.step", s.StepKey), attribute.String("bas.step_type", s.StepType))
	if old, ok := t.steps[s.RunID+"/"+s.StepKey]; ok {
		old.End()
	}
	t.steps[s.RunID+"/"+s.StepKey] = sp
}

// StepFinished records the step's duration and ends its span.
func (t *Telemetry) StepFinished(s runengine.StepNote) {
	if t.m != nil && !s.StartedAt.IsZero() {
		t.m.observer(t.m.stepDuration, s.StepType, string(s.Status), true).Observe(s.EndedAt.Sub(s.StartedAt).Seconds())
	}
	if t.tr == nil {
		return
	}
	k := s.RunID + "/" + s.StepKey
	t.mu.Lock()
	sp, ok := t.steps[k]
	delete(t.steps, k)
	t.mu.Unlock()
	if !ok {
		return // begun before a restart: its span was lost with the process
	}
	sp.SetAttributes(attribute.String("bas.status", string(s.Status)), attribute.Int("bas.attempts", s.Attempts))
	if s.Status != runengine.StepCompleted {
		sp.SetStatus(codes.Error, s.Error)
	}
	sp.End(trace.WithTimestamp(s.EndedAt))
}

// Committed records a group commit.
func (t *Telemetry) Committed(changes int, took time.Duration, err error) {
	if t.m == nil {
		return
	}
	if err != nil {
		t.m.commitErrors.Inc()
		return
	}
	t.m.commitDuration.Observe(took.Seconds())
	t.m.commitBatch.Observe(float64(changes))
}

// ProviderCall times a provider call and spans it, under the step's span
// when a run makes it.
func (t *Telemetry) ProviderCall(ctx context.Context, provider string, call capability.Call) (context.Context, func(error)) {
	var sp trace.Span
	if t.tr != nil {
		info, inRun := runengine.RunFromContext(ctx)
		if inRun {
			t.mu.Lock()
			if step, ok := t.steps[info.ID+"/"+info.StepKey]; ok {
				ctx = trace.ContextWithSpan(ctx, step)
			}
			t.mu.Unlock()
		}
		var cctx context.Context
		cctx, sp = t.tr.Start(ctx, "call "+call.Capability, trace.WithSpanKind(trace.SpanKindClient))
		if sp.IsRecording() {
			ctx = cctx
			sp.SetAttributes(attribute.String("bas.tenant", call.Tenant), attribute.String("bas.provider", provider),
				attribute.String("bas.capability", call.Capability))
			if inRun {
				sp.SetAttributes(attribute.String("bas.run_id", info.ID), attribute.String("bas.step", info.StepKey),
					attribute.String("bas.idempotency_key", call.IdempotencyKey))
			}
		} else {
			sp = nil
		}
	}
	began := time.Now()
	return ctx, func(err error) {
		if t.m != nil {
			t.m.observer(t.m.callDuration, provider, "", false).Observe(time.Since(began).Seconds())
			if err != nil {
				t.m.counter(t.m.callErrors, provider, "", false).Inc()
			}
		}
		if sp != nil {
			if err != nil {
				sp.RecordError(err)
				sp.SetStatus(codes.Error, err.Error())
			}
			sp.End()
		}
	}
}

// PluginRestarted counts a plugin restart (nil-safe).
func (t *Telemetry) PluginRestarted(provider string) {
	if t != nil && t.m != nil {
		t.m.pluginRestarts.WithLabelValues(provider).Inc()
	}
}

// WebhookAttempt counts a webhook delivery attempt (nil-safe).
func (t *Telemetry) WebhookAttempt(outcome string) {
	if t != nil && t.m != nil {
		t.m.webhooks.WithLabelValues(outcome).Inc()
	}
}

// HTTPRequest opens the span of an API request on its route pattern and
// returns the function that records its end (nil-safe).
func (t *Telemetry) HTTPRequest(ctx context.Context, method, route, requestID string) (context.Context, func(status int, tenant string)) {
	if t == nil {
		return ctx, func(int, string) {}
	}
	var sp trace.Span
	if t.tr != nil {
		var sctx context.Context
		sctx, sp = t.tr.Start(ctx, method+" "+route, trace.WithSpanKind(trace.SpanKindServer))
		if sp.IsRecording() {
			ctx = sctx
			sp.SetAttributes(attribute.String("http.request.method", method), attribute.String("http.route", route),
				attribute.String("bas.request_id", requestID))
		} else {
			sp = nil
		}
	}
	began := time.Now()
	return ctx, func(status int, tenant string) {
		if t.m != nil {
			t.m.httpRequests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
			t.m.httpDuration.WithLabelValues(method, route).Observe(time.Since(began).Seconds())
		}
		if sp != nil {
			sp.SetAttributes(attribute.Int("http.response.status_code", status))
			if tenant != "" {
				sp.SetAttributes(attribute.String("bas.tenant", tenant))
			}
			if status >= http.StatusInternalServerError {
				sp.SetStatus(codes.Error, http.StatusText(status))
			}
			sp.End()
		}
	}
}
