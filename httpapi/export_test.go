package httpapi

import (
	"encoding/json"

	"github.com/bas-platform/bas"
)

// HandleForTest declares one more route after New and rebuilds the routers,
// so tests of the shared layers (idempotency, limits) can use a handler
// they control. Call it before the handler serves.
func (h *Handler) HandleForTest(method, path, app, perm string, fn func(c *Ctx) error) {
	h.handle(method, path, app, perm, fn)
	h.statics = nil
	h.build()
}

// UploadForTest is HandleForTest for an upload route.
func (h *Handler) UploadForTest(method, path, app, perm string, fn func(c *Ctx) error) {
	h.handle(method, path, app, perm, fn).Upload("file")
	h.statics = nil
	h.build()
}

// Ctx is a request as a handler sees it, for handlers added by tests.
type Ctx = request

// BuildOpenAPIForTest builds the OpenAPI document afresh (OpenAPI caches
// it), for the benchmark of its generation.
func (h *Handler) BuildOpenAPIForTest() []byte {
	return buildOpenAPI(h.routes, h.opts.BasePath)
}

// IdemRecordAsJSONForTest is the stored idempotency record raw (of key
// id) in the JSON form records were kept in before the binary one.
func IdemRecordAsJSONForTest(raw []byte, id string) ([]byte, error) {
	rec, err := decodeIdemRecord(raw)
	if err != nil {
		return nil, err
	}
	rec.ID = id
	return json.Marshal(rec)
}

// IdemFilterReadyForTest reports whether ws's filter of stored
// Idempotency-Keys has taken the records stored before it (false on a
// cluster node, which has none).
func IdemFilterReadyForTest(ws *bas.Workspace) bool {
	f := idemSharedOf(ws).filter
	return f != nil && f.ready.Load()
}

// IdemFilterLayersForTest is how many layers ws's filter of stored
// Idempotency-Keys holds.
func IdemFilterLayersForTest(ws *bas.Workspace) int {
	return len(*idemSharedOf(ws).filter.layers.Load())
}
