package access

import (
	"context"

	"github.com/bas-platform/bas/store"
)

// Tenants calls fn with the id of every workspace, a page at a time (for
// metrics that sum over workspaces).
func (s *Service) Tenants(ctx context.Context, fn func(tenant string) error) error {
	p := store.Page{Limit: 200, Forward: true}
	for {
		var page []*Workspace
		var next string
		err := s.cfg.Store.View(ctx, func(r store.Reader) error {
			var err error
			page, next, err = workspaces.List(r, store.System, p)
			return err
		})
		if err != nil {
			return err
		}
		for _, w := range page {
			if err := fn(w.ID); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		p.Cursor = next
	}
}
