package bas

import (
	"context"

	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/apps/webhooks"
	"github.com/bas-platform/bas/internal/telemetry"
	"github.com/bas-platform/bas/runengine"
)

// openTelemetry sets up metrics and traces from Options (nothing when
// neither is given).
func (ws *Workspace) openTelemetry() error {
	t, err := telemetry.New(telemetry.Config{Metrics: ws.opts.Metrics, TracerProvider: ws.opts.TracerProvider,
		Gauges: func(ctx context.Context) (runengine.Gauges, error) {
			var sum runengine.Gauges
			if ws.engine == nil || ws.access == nil {
				return sum, nil
			}
			err := ws.access.Tenants(ctx, func(tenant string) error {
				g, err := ws.engine.Gauges(ctx, tenant)
				sum.OpenTasks += g.OpenTasks
				sum.PendingApprovals += g.PendingApprovals
				sum.OverdueRuns += g.OverdueRuns
				return err
			})
			return sum, err
		}})
	if err != nil || t == nil {
		return err
	}
	ws.tel = t
	return nil
}

// callObserver is the registry's observer: nil (no cost) when off.
func (ws *Workspace) callObserver() capability.CallObserver {
	if ws.tel == nil {
		return nil
	}
	return ws.tel
}

// engineObserver is the engine's observer: nil (no cost) when off.
func (ws *Workspace) engineObserver() runengine.Observer {
	if ws.tel == nil {
		return nil
	}
	return ws.tel
}

// openWebhooks wires outbound webhooks; they start delivering once the
// engine is open.
func (ws *Workspace) openWebhooks() error {
	svc, err := webhooks.New(webhooks.Config{Store: ws.store, Clock: ws.opts.Clock, Logger: ws.opts.Logger,
		Resolver: ws.opts.WebhookResolver, Allow: ws.opts.WebhookAllow,
		OnAttempt: func(_ string, _ *webhooks.Delivery, outcome string) { ws.tel.WebhookAttempt(outcome) },
		Owns:      ws.ownsDelivery()})
	if err != nil {
		return err
	}
	ws.webhooks = svc
	return nil
}
