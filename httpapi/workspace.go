package httpapi

import (
	"context"
	"encoding/json"

	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/internal/wiring"
	"github.com/bas-platform/bas/runengine"
)

// workspace is what the handlers use of a workspace: its public calls and
// the internal services the API serves (access, documents, decisions,
// automation), which bas keeps out of its public API.
type workspace struct {
	*bas.Workspace
	*wiring.Services
}

func newWorkspace(ws *bas.Workspace) workspace {
	return workspace{Workspace: ws, Services: wiring.Of(ws.Internal())}
}

// startJSON starts a run and answers it as the API shows it, encoded by the
// engine's worker (the fast path of POST /v1/processes/:id/start).
func (h *Handler) startJSON(ctx context.Context, p runengine.StartParams) (json.RawMessage, error) {
	return wiring.EngineOf(h.ws.Engine()).StartJSON(ctx, p)
}
