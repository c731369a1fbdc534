package httpapi

import (
	"github.com/bas-platform/bas"
	"github.com/bas-platform/bas/internal/wiring"
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
