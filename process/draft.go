package process

import (
	"github.com/bas-platform/bas/internal/refs"
	"github.com/cockroachdb/errors"
)

// DraftOutput is a draft step's rendered output, before a person reviews it.
type DraftOutput struct {
	Title string `json:"title"`
	Text  string `json:"text"`
}

// render renders a draft template: every ${path} reference is replaced by
// the text of the value at that path of data (numbers in plain decimal,
// objects and lists as compact JSON), "$${" is a literal "${". A reference
// to a missing path is an error naming it. It is pure and deterministic.
func render(template string, data map[string]any) (string, error) {
	v, err := refs.Resolve(template, data)
	if err != nil {
		return "", errors.Wrap(err, "render template")
	}
	// A template that is exactly one reference resolves to the value
	// itself; a draft is always text.
	s, err := refs.Text(v)
	if err != nil {
		return "", errors.Wrap(err, "render template")
	}
	return s, nil
}
