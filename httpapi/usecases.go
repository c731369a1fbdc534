package httpapi

import (
	"net/http"
	"reflect"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/apps/usecases"
	"github.com/bas-platform/bas/internal/errs"
)

// The use-case catalog and register (interface.md section 4). Any member
// reads; adoption and the workspace profile need usecases.manage; a person
// sets their own departments, anyone's with usecases.manage.
func (h *Handler) registerUseCaseRoutes() {
	app, manage := access.AppUsecases, access.PermUsecasesManage
	h.handle("GET", "/v1/use-cases", app, "", h.handleUseCasesList).Out(200, []usecases.EntryOut{}).Query("scope", "department")
	h.handle("GET", "/v1/use-cases/taxonomy", app, "", h.handleUseCaseTaxonomy).Out(200, usecases.Taxonomy{})
	h.handle("GET", "/v1/use-cases/register", app, "", h.handleUseCaseRegister).Out(200, usecases.Register{}).Query("status")
	h.handle("GET", "/v1/use-cases/profile", app, "", h.handleUseCaseProfileGet).Out(200, usecases.Profile{})
	h.handle("PUT", "/v1/use-cases/profile", app, manage, h.handleUseCaseProfileSet).In(usecases.ProfileIn{}).Out(200, usecases.Profile{})
	h.handle("PUT", "/v1/use-cases/members/:user_id/departments", app, "", h.handleUseCaseDepartments).In(usecases.DepartmentsIn{}).Out(200, usecases.MemberDepartments{})
	h.handle("GET", "/v1/use-cases/:use_case_id", app, "", h.handleUseCaseGet).Out(200, usecases.EntryOut{})
	h.handle("PUT", "/v1/use-cases/:use_case_id/adoption", app, manage, h.handleUseCaseAdoption).In(usecases.AdoptionIn{}).Out(200, usecases.Adoption{})
}

// handleUseCasesList serves GET /v1/use-cases?scope=&department=: the
// entries the scope selects for the caller, by id (not paged: the catalog
// is small and fixed).
func (h *Handler) handleUseCasesList(c *request) error {
	q := c.Query()
	query := usecases.Query{Scope: q.Get("scope"), Department: q.Get("department")}
	if err := h.ws.UseCases().Check(query); err != nil {
		return err
	}
	v, err := h.ws.UseCases().Viewer(c.Context(), c.P)
	if err != nil {
		return err
	}
	out, err := h.ws.UseCases().List(c.Context(), v, query)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// handleUseCaseTaxonomy serves GET /v1/use-cases/taxonomy.
func (h *Handler) handleUseCaseTaxonomy(c *request) error {
	return c.JSON(http.StatusOK, h.ws.UseCases().Catalog().Taxonomy())
}

// handleUseCaseRegister serves GET /v1/use-cases/register?status=: the
// adopted entries, most recently changed first, with the counts.
func (h *Handler) handleUseCaseRegister(c *request) error {
	v, err := h.ws.UseCases().Viewer(c.Context(), c.P)
	if err != nil {
		return err
	}
	reg, err := h.ws.UseCases().Register(c.Context(), v, c.Query().Get("status"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, reg)
}

// handleUseCaseProfileGet serves GET /v1/use-cases/profile.
func (h *Handler) handleUseCaseProfileGet(c *request) error {
	p, err := h.ws.UseCases().Profile(c.Context(), c.Tenant())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

// handleUseCaseProfileSet serves PUT /v1/use-cases/profile: replaces the
// workspace's industries, size, systems and regulations.
func (h *Handler) handleUseCaseProfileSet(c *request) error {
	raw, err := c.jsonBody(reflect.TypeFor[usecases.ProfileIn]())
	if err != nil {
		return err
	}
	in, err := usecases.DecodeProfile(raw)
	if err != nil {
		return inBody(err)
	}
	p, err := h.ws.UseCases().SetProfile(c.Context(), c.Tenant(), c.P.Actor(), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, p)
}

// handleUseCaseDepartments serves PUT
// /v1/use-cases/members/{user_id}/departments (DepartmentsIn). The member
// is looked up first: another tenant's person is a 404 whatever the body.
func (h *Handler) handleUseCaseDepartments(c *request) error {
	uid := c.Param("user_id")
	if _, err := h.ws.Access().Member(c.Context(), c.Tenant(), uid); err != nil {
		return err
	}
	var in usecases.DepartmentsIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.UseCases().SetDepartments(c.Context(), c.P, uid, in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, out)
}

// handleUseCaseGet serves GET /v1/use-cases/{use_case_id}.
func (h *Handler) handleUseCaseGet(c *request) error {
	v, err := h.ws.UseCases().Viewer(c.Context(), c.P)
	if err != nil {
		return err
	}
	e, err := h.ws.UseCases().Get(c.Context(), v, c.Param("use_case_id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, e)
}

// handleUseCaseAdoption serves PUT /v1/use-cases/{use_case_id}/adoption
// (AdoptionIn): the adoption after the change.
func (h *Handler) handleUseCaseAdoption(c *request) error {
	id := c.Param("use_case_id")
	if _, ok := h.ws.UseCases().Catalog().Get(id); !ok {
		return errs.NotFoundf("use case not found")
	}
	raw, err := c.jsonBody(reflect.TypeFor[usecases.AdoptionIn]())
	if err != nil {
		return err
	}
	in, err := usecases.DecodeAdoption(raw)
	if err != nil {
		return inBody(err)
	}
	a, err := h.ws.UseCases().SetAdoption(c.Context(), c.Tenant(), c.P.Actor(), id, in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, a)
}
