package crm

import (
	"context"
	"strings"

	"github.com/bas-platform/bas/internal/errs"
	"github.com/bas-platform/bas/store"
)

// ContactFilter selects contacts; at most one field may be set.
type ContactFilter struct {
	CompanyID string
	OwnerID   string
	Lifecycle string
	// Q lists the contacts whose first name, full name, last name or
	// e-mail address starts with it (case and punctuation aside), in
	// alphabetical order of what matched.
	Q string
}

// CreateContact adds a contact (lifecycle defaults to lead) and emits
// crm.contact.created.
func (s *Service) CreateContact(ctx context.Context, tenant string, in ContactIn) (*Contact, error) {
	var out *Contact
	err := s.update(ctx, func(tx store.Txn) error {
		c, err := s.createContactTx(ctx, tx, tenant, in)
		out = c
		return err
	})
	return out, err
}

func (s *Service) createContactTx(ctx context.Context, tx store.Txn, tenant string, in ContactIn) (*Contact, error) {
	if err := errs.Validation(in.Validate()...); err != nil {
		return nil, err
	}
	if err := s.checkOwner(ctx, tenant, clean(in.OwnerID), "owner_id"); err != nil {
		return nil, err
	}
	if err := refs(tx, tenant, nil, clean(in.CompanyID), nil, nil); err != nil {
		return nil, err
	}
	now := s.now()
	c := &Contact{ID: s.ids.New(prefixContact, now), FirstName: strings.TrimSpace(in.FirstName), LastName: clean(in.LastName),
		Email: clean(in.Email), Phone: clean(in.Phone), Title: clean(in.Title), CompanyID: clean(in.CompanyID),
		OwnerID: clean(in.OwnerID), Lifecycle: DefaultLifecycle, CreatedAt: now, UpdatedAt: now}
	if in.Lifecycle != nil {
		c.Lifecycle = *in.Lifecycle
	}
	if err := contacts.Put(tx, tenant, c); err != nil {
		return nil, err
	}
	return c, s.emit(tx, tenant, "crm.contact.created", c, "contact_id", c.ID, nil)
}

// GetContact returns one contact.
func (s *Service) GetContact(ctx context.Context, tenant, id string) (*Contact, error) {
	var out *Contact
	err := s.view(ctx, func(r store.Reader) error {
		var err error
		out, err = contacts.Get(r, tenant, id)
		return err
	})
	return out, err
}

// ListContacts returns a page of contacts, newest first (alphabetical
// with Q).
func (s *Service) ListContacts(ctx context.Context, tenant string, f ContactFilter, p store.Page) ([]*Contact, string, error) {
	index, values, err := choose([]filterValue{{"company_id", f.CompanyID, "c"}, {"owner_id", f.OwnerID, "o"},
		{"lifecycle", f.Lifecycle, "l"}, {"q", f.Q, "q"}}, nil)
	if err != nil {
		return nil, "", err
	}
	return listPage(ctx, s, contacts, tenant, index, values, f.Q, p, contactTexts)
}

// UpdateContact applies a patch.
func (s *Service) UpdateContact(ctx context.Context, tenant, id string, in ContactPatch) (*Contact, error) {
	var out *Contact
	err := s.update(ctx, func(tx store.Txn) error {
		c, err := contacts.Get(tx, tenant, id)
		if err != nil {
			return err
		}
		if err := errs.Validation(in.Validate()...); err != nil {
			return err
		}
		if in.OwnerID != nil {
			if err := s.checkOwner(ctx, tenant, clean(in.OwnerID), "owner_id"); err != nil {
				return err
			}
		}
		if err := refs(tx, tenant, nil, clean(in.CompanyID), nil, nil); err != nil {
			return err
		}
		if in.FirstName != nil {
			c.FirstName = strings.TrimSpace(*in.FirstName)
		}
		set(&c.LastName, in.LastName, in.Null, "last_name")
		set(&c.Email, in.Email, in.Null, "email")
		set(&c.Phone, in.Phone, in.Null, "phone")
		set(&c.Title, in.Title, in.Null, "title")
		set(&c.CompanyID, in.CompanyID, in.Null, "company_id")
		set(&c.OwnerID, in.OwnerID, in.Null, "owner_id")
		switch {
		case in.Lifecycle != nil:
			c.Lifecycle = *in.Lifecycle
		case nulled(in.Null, "lifecycle"):
			c.Lifecycle = DefaultLifecycle
		}
		c.UpdatedAt = s.now()
		out = c
		return contacts.Put(tx, tenant, c)
	})
	return out, err
}

// DeleteContact deletes a contact and, in the same transaction, unlinks
// (sets to null) the contact_id of its deals and activities.
func (s *Service) DeleteContact(ctx context.Context, tenant, id string) error {
	return tooManyLinks(s.update(ctx, func(tx store.Txn) error {
		if err := contacts.Delete(tx, tenant, id); err != nil {
			return err
		}
		now := s.now()
		if err := unlink(tx, tenant, deals, "k", id, func(d *Deal) { d.ContactID, d.UpdatedAt = nil, now }); err != nil {
			return err
		}
		return unlink(tx, tenant, activities, "k", id, func(a *Activity) { a.ContactID, a.UpdatedAt = nil, now })
	}))
}
