package httpapi

import (
	"net/http"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/apps/crm"
	"github.com/bas-platform/bas/internal/errs"
)

// The CRM app (api.md section 5, crm row, and section 6, CRM stages).
// Reading needs crm.read; every change needs crm.write.
func (h *Handler) registerCRMRoutes() {
	app := access.AppCRM
	read, write := access.PermCRMRead, access.PermCRMWrite
	h.handle("GET", "/v1/crm/companies", app, read, h.handleCompaniesList).List(crm.Company{}).Query("owner_id", "q")
	h.handle("POST", "/v1/crm/companies", app, write, h.handleCompanyCreate).In(crm.CompanyIn{}).Out(201, crm.Company{})
	h.handle("GET", "/v1/crm/companies/:id", app, read, h.handleCompanyGet).Out(200, crm.Company{})
	h.handle("PATCH", "/v1/crm/companies/:id", app, write, h.handleCompanyUpdate).In(crm.CompanyPatch{}).Out(200, crm.Company{})
	h.handle("DELETE", "/v1/crm/companies/:id", app, write, h.handleCompanyDelete).Out(204, nil)
	h.handle("GET", "/v1/crm/contacts", app, read, h.handleContactsList).List(crm.Contact{}).Query("company_id", "owner_id", "lifecycle", "q")
	h.handle("POST", "/v1/crm/contacts", app, write, h.handleContactCreate).In(crm.ContactIn{}).Out(201, crm.Contact{})
	h.handle("GET", "/v1/crm/contacts/:id", app, read, h.handleContactGet).Out(200, crm.Contact{})
	h.handle("PATCH", "/v1/crm/contacts/:id", app, write, h.handleContactUpdate).In(crm.ContactPatch{}).Out(200, crm.Contact{})
	h.handle("DELETE", "/v1/crm/contacts/:id", app, write, h.handleContactDelete).Out(204, nil)
	h.handle("GET", "/v1/crm/deals", app, read, h.handleDealsList).List(crm.Deal{}).Query("pipeline_id", "stage_id", "status", "company_id", "contact_id", "owner_id", "q")
	h.handle("POST", "/v1/crm/deals", app, write, h.handleDealCreate).In(crm.DealIn{}).Out(201, crm.Deal{})
	h.handle("GET", "/v1/crm/deals/:id", app, read, h.handleDealGet).Out(200, crm.Deal{})
	h.handle("PATCH", "/v1/crm/deals/:id", app, write, h.handleDealUpdate).In(crm.DealPatch{}).Out(200, crm.Deal{})
	h.handle("DELETE", "/v1/crm/deals/:id", app, write, h.handleDealDelete).Out(204, nil)
	h.handle("GET", "/v1/crm/activities", app, read, h.handleActivitiesList).List(crm.Activity{}).Query("deal_id", "contact_id", "company_id")
	h.handle("POST", "/v1/crm/activities", app, write, h.handleActivityCreate).In(crm.ActivityIn{}).Out(201, crm.Activity{})
	h.handle("GET", "/v1/crm/activities/:id", app, read, h.handleActivityGet).Out(200, crm.Activity{})
	h.handle("PATCH", "/v1/crm/activities/:id", app, write, h.handleActivityUpdate).In(crm.ActivityPatch{}).Out(200, crm.Activity{})
	h.handle("DELETE", "/v1/crm/activities/:id", app, write, h.handleActivityDelete).Out(204, nil)
	h.handle("GET", "/v1/crm/pipelines", app, read, h.handlePipelinesList).List(crm.Pipeline{})
	h.handle("POST", "/v1/crm/pipelines", app, write, h.handlePipelineCreate).In(crm.PipelineIn{}).Out(201, crm.Pipeline{})
	h.handle("GET", "/v1/crm/pipelines/:id", app, read, h.handlePipelineGet).Out(200, crm.Pipeline{})
	h.handle("PATCH", "/v1/crm/pipelines/:id", app, write, h.handlePipelineUpdate).In(crm.PipelinePatch{}).Out(200, crm.Pipeline{})
	h.handle("DELETE", "/v1/crm/pipelines/:id", app, write, h.handlePipelineDelete).Out(204, nil)
	h.handle("GET", "/v1/crm/pipelines/:id/board", app, read, h.handlePipelineBoard).Query("limit").Out(200, []crm.BoardColumn{})
	h.handle("POST", "/v1/crm/pipelines/:id/stages", app, write, h.handleStageCreate).In(crm.StageIn{}).Out(201, crm.Pipeline{})
	h.handle("PATCH", "/v1/crm/pipelines/:id/stages/:stage_id", app, write, h.handleStageUpdate).In(crm.StagePatch{}).Out(200, crm.Pipeline{})
	h.handle("DELETE", "/v1/crm/pipelines/:id/stages/:stage_id", app, write, h.handleStageDelete).Out(204, nil)
}

// ---- Companies ----------------------------------------------------------------

// handleCompaniesList serves GET /v1/crm/companies?owner_id=&q=.
func (h *Handler) handleCompaniesList(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	q := c.Query()
	out, next, err := h.ws.CRM().ListCompanies(c.Context(), c.Tenant(), crm.CompanyFilter{OwnerID: q.Get("owner_id"), Q: q.Get("q")}, p)
	if err != nil {
		return err
	}
	return c.List(out, next)
}

// handleCompanyCreate serves POST /v1/crm/companies (CompanyIn): 201.
func (h *Handler) handleCompanyCreate(c *request) error {
	var in crm.CompanyIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.CRM().CreateCompany(c.Context(), c.Tenant(), in)
	if err != nil {
		return inBody(err)
	}
	return c.Created("/v1/crm/companies/"+out.ID, out)
}

// handleCompanyGet serves GET /v1/crm/companies/{id}.
func (h *Handler) handleCompanyGet(c *request) error {
	out, err := h.ws.CRM().GetCompany(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// handleCompanyUpdate serves PATCH /v1/crm/companies/{id} (CompanyPatch).
func (h *Handler) handleCompanyUpdate(c *request) error {
	if err := h.ws.CRM().CompanyExists(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in crm.CompanyPatch
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.CRM().UpdateCompany(c.Context(), c.Tenant(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, out)
}

// handleCompanyDelete serves DELETE /v1/crm/companies/{id}: 204; its
// contacts, deals and activities are unlinked.
func (h *Handler) handleCompanyDelete(c *request) error {
	if err := h.ws.CRM().DeleteCompany(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent()
}

// ---- Contacts -----------------------------------------------------------------

// handleContactsList serves GET /v1/crm/contacts?company_id=&owner_id=&lifecycle=&q=.
func (h *Handler) handleContactsList(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	q := c.Query()
	f := crm.ContactFilter{CompanyID: q.Get("company_id"), OwnerID: q.Get("owner_id"), Lifecycle: q.Get("lifecycle"), Q: q.Get("q")}
	out, next, err := h.ws.CRM().ListContacts(c.Context(), c.Tenant(), f, p)
	if err != nil {
		return err
	}
	return c.List(out, next)
}

// handleContactCreate serves POST /v1/crm/contacts (ContactIn): 201.
func (h *Handler) handleContactCreate(c *request) error {
	var in crm.ContactIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.CRM().CreateContact(c.Context(), c.Tenant(), in)
	if err != nil {
		return inBody(err)
	}
	return c.Created("/v1/crm/contacts/"+out.ID, out)
}

// handleContactGet serves GET /v1/crm/contacts/{id}.
func (h *Handler) handleContactGet(c *request) error {
	out, err := h.ws.CRM().GetContact(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// handleContactUpdate serves PATCH /v1/crm/contacts/{id} (ContactPatch).
func (h *Handler) handleContactUpdate(c *request) error {
	if err := h.ws.CRM().ContactExists(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in crm.ContactPatch
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.CRM().UpdateContact(c.Context(), c.Tenant(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, out)
}

// handleContactDelete serves DELETE /v1/crm/contacts/{id}: 204; its deals
// and activities are unlinked.
func (h *Handler) handleContactDelete(c *request) error {
	if err := h.ws.CRM().DeleteContact(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent()
}

// ---- Deals --------------------------------------------------------------------

// handleDealsList serves GET
// /v1/crm/deals?pipeline_id=&stage_id=&status=&company_id=&contact_id=&owner_id=&q=.
func (h *Handler) handleDealsList(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	q := c.Query()
	f := crm.DealFilter{PipelineID: q.Get("pipeline_id"), StageID: q.Get("stage_id"), Status: q.Get("status"), CompanyID: q.Get("company_id"),
		ContactID: q.Get("contact_id"), OwnerID: q.Get("owner_id"), Q: q.Get("q")}
	out, next, err := h.ws.CRM().ListDeals(c.Context(), c.Tenant(), f, p)
	if err != nil {
		return err
	}
	return c.List(out, next)
}

// handleDealCreate serves POST /v1/crm/deals (DealIn): 201.
func (h *Handler) handleDealCreate(c *request) error {
	var in crm.DealIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.CRM().CreateDeal(c.Context(), c.Tenant(), in)
	if err != nil {
		return inBody(err)
	}
	return c.Created("/v1/crm/deals/"+out.ID, out)
}

// handleDealGet serves GET /v1/crm/deals/{id}.
func (h *Handler) handleDealGet(c *request) error {
	out, err := h.ws.CRM().GetDeal(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// handleDealUpdate serves PATCH /v1/crm/deals/{id} (DealPatch); a new
// stage_id moves the deal.
func (h *Handler) handleDealUpdate(c *request) error {
	if err := h.ws.CRM().DealExists(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in crm.DealPatch
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.CRM().UpdateDeal(c.Context(), c.Tenant(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, out)
}

// handleDealDelete serves DELETE /v1/crm/deals/{id}: 204.
func (h *Handler) handleDealDelete(c *request) error {
	if err := h.ws.CRM().DeleteDeal(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent()
}

// ---- Activities ---------------------------------------------------------------

// handleActivitiesList serves GET
// /v1/crm/activities?deal_id=&contact_id=&company_id=: newest first.
func (h *Handler) handleActivitiesList(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	q := c.Query()
	f := crm.ActivityFilter{DealID: q.Get("deal_id"), ContactID: q.Get("contact_id"), CompanyID: q.Get("company_id")}
	out, next, err := h.ws.CRM().ListActivities(c.Context(), c.Tenant(), f, p)
	if err != nil {
		return err
	}
	return c.List(out, next)
}

// handleActivityCreate serves POST /v1/crm/activities (ActivityIn): 201.
func (h *Handler) handleActivityCreate(c *request) error {
	var in crm.ActivityIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.CRM().LogActivity(c.Context(), c.Tenant(), in)
	if err != nil {
		return inBodyWithBodyField(err)
	}
	return c.Created("/v1/crm/activities/"+out.ID, out)
}

// handleActivityGet serves GET /v1/crm/activities/{id}.
func (h *Handler) handleActivityGet(c *request) error {
	out, err := h.ws.CRM().GetActivity(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// handleActivityUpdate serves PATCH /v1/crm/activities/{id} (ActivityPatch).
func (h *Handler) handleActivityUpdate(c *request) error {
	if _, err := h.ws.CRM().GetActivity(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in crm.ActivityPatch
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.CRM().UpdateActivity(c.Context(), c.Tenant(), c.Param("id"), in)
	if err != nil {
		return inBodyWithBodyField(err)
	}
	return c.JSON(http.StatusOK, out)
}

// handleActivityDelete serves DELETE /v1/crm/activities/{id}: 204.
func (h *Handler) handleActivityDelete(c *request) error {
	if err := h.ws.CRM().DeleteActivity(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent()
}

// ---- Pipelines, stages and the board -------------------------------------------

// handlePipelinesList serves GET /v1/crm/pipelines: oldest first, the
// default pipeline (made on first read) leading.
func (h *Handler) handlePipelinesList(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	out, next, err := h.ws.CRM().ListPipelines(c.Context(), c.Tenant(), p)
	if err != nil {
		return err
	}
	return c.List(out, next)
}

// handlePipelineCreate serves POST /v1/crm/pipelines ({name, stages}): 201.
func (h *Handler) handlePipelineCreate(c *request) error {
	var in crm.PipelineIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.CRM().CreatePipeline(c.Context(), c.Tenant(), in)
	if err != nil {
		return inBody(err)
	}
	return c.Created("/v1/crm/pipelines/"+out.ID, out)
}

// handlePipelineGet serves GET /v1/crm/pipelines/{id}.
func (h *Handler) handlePipelineGet(c *request) error {
	out, err := h.ws.CRM().GetPipeline(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// handlePipelineUpdate serves PATCH /v1/crm/pipelines/{id} ({name}).
func (h *Handler) handlePipelineUpdate(c *request) error {
	if _, err := h.ws.CRM().GetPipeline(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in crm.PipelinePatch
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.CRM().UpdatePipeline(c.Context(), c.Tenant(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, out)
}

// handlePipelineDelete serves DELETE /v1/crm/pipelines/{id}: 204; the
// default pipeline or one holding deals: 409.
func (h *Handler) handlePipelineDelete(c *request) error {
	if err := h.ws.CRM().DeletePipeline(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent()
}

// handlePipelineBoard serves GET /v1/crm/pipelines/{id}/board?limit=: a
// BoardColumn per stage, in stage order, each with at most limit deals
// (default 50, max 200) and totals over all of them.
func (h *Handler) handlePipelineBoard(c *request) error {
	limit, err := pageLimit(c.Query().Get("limit"))
	if err != nil {
		return err
	}
	out, err := h.ws.CRM().Board(c.Context(), c.Tenant(), c.Param("id"), limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// handleStageCreate serves POST /v1/crm/pipelines/{id}/stages (StageIn):
// 201 with the pipeline.
func (h *Handler) handleStageCreate(c *request) error {
	if _, err := h.ws.CRM().GetPipeline(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in crm.StageIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.CRM().AddStage(c.Context(), c.Tenant(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.Created("/v1/crm/pipelines/"+out.ID, out)
}

// handleStageUpdate serves PATCH /v1/crm/pipelines/{id}/stages/{stage_id}
// (StagePatch): 200 with the pipeline.
func (h *Handler) handleStageUpdate(c *request) error {
	if err := h.stageExists(c); err != nil {
		return err
	}
	var in crm.StagePatch
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.CRM().UpdateStage(c.Context(), c.Tenant(), c.Param("id"), c.Param("stage_id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, out)
}

// handleStageDelete serves DELETE /v1/crm/pipelines/{id}/stages/{stage_id}:
// 204; a stage holding deals, or a pipeline's last open stage: 409.
func (h *Handler) handleStageDelete(c *request) error {
	if _, err := h.ws.CRM().DeleteStage(c.Context(), c.Tenant(), c.Param("id"), c.Param("stage_id")); err != nil {
		return err
	}
	return c.NoContent()
}

// stageExists answers 404 for a pipeline or a stage the caller's tenant
// does not have.
func (h *Handler) stageExists(c *request) error {
	p, err := h.ws.CRM().GetPipeline(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	for _, st := range p.Stages {
		if st.ID == c.Param("stage_id") {
			return nil
		}
	}
	return errs.NotFoundf("stage not found")
}
