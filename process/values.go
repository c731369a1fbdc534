package process

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strings"

	"github.com/bas-platform/bas/internal/jsonvalue"
	"github.com/bas-platform/bas/internal/refs"
	"github.com/cockroachdb/errors"
)

// ratValue renders r as a JSON value: an integer when it is one (int64 when
// it fits), otherwise a float64.
func ratValue(r *big.Rat) any {
	if r.IsInt() && r.Num().IsInt64() {
		return r.Num().Int64()
	}
	f, _ := r.Float64()
	return f
}

// lookup returns the value at path in v (an object), or v itself for an
// empty path.
func lookup(v any, path string) (any, bool) {
	if path == "" {
		return v, true
	}
	m, ok := jsonvalue.AsObject(v)
	if !ok {
		return nil, false
	}
	return refs.Lookup(m, path)
}

// text renders a value for messages and key comparison.
func text(v any) string {
	s, err := refs.Text(v)
	if err != nil {
		return "?"
	}
	return s
}

// decodeJSON decodes raw into v keeping numbers exact (json.Number in any
// field) and rejecting trailing data.
func decodeJSON(raw []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return errors.Wrap(err, "decode config")
	}
	if d.More() {
		return errors.New("decode config: unexpected data after the value")
	}
	return nil
}

// decodeInto converts a decoded JSON value (a resolved config) into the
// config struct v.
func decodeInto(config any, v any) error {
	raw, err := json.Marshal(config)
	if err != nil {
		return errors.Wrap(err, "encode config")
	}
	return decodeJSON(raw, v)
}

// isReference reports whether s holds a ${...} reference, whose value is
// known only when the step runs.
func isReference(s string) bool {
	return strings.Contains(strings.ReplaceAll(s, "$${", ""), "${")
}
