package httpapi

import (
	"context"
	"mime"
	"net/http"
	"strconv"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/apps/invoicing"
	"github.com/bas-platform/bas/internal/errs"
)

// The invoicing app (api.md section 5, invoicing row). Reading needs
// invoicing.read; every change needs invoicing.write. A payment link
// (/v1/invoicing/pay/{token}) is public: the token is the credential.
func (h *Handler) registerInvoicingRoutes() {
	app := access.AppInvoicing
	read, write := access.PermInvoicingRead, access.PermInvoicingWrite
	h.handle("GET", "/v1/invoicing/customers", app, read, h.handleCustomersList).List(invoicing.Customer{}).Query("q", "company_id")
	h.handle("POST", "/v1/invoicing/customers", app, write, h.handleCustomerCreate).In(invoicing.CustomerIn{}).Out(201, invoicing.Customer{})
	h.handle("GET", "/v1/invoicing/customers/:id", app, read, h.handleCustomerGet).Out(200, invoicing.Customer{})
	h.handle("PATCH", "/v1/invoicing/customers/:id", app, write, h.handleCustomerUpdate).In(invoicing.CustomerPatch{}).Out(200, invoicing.Customer{})
	h.handle("DELETE", "/v1/invoicing/customers/:id", app, write, h.handleCustomerDelete).Out(204, nil)
	h.handle("GET", "/v1/invoicing/invoices", app, read, h.handleInvoicesList).List(invoicing.Invoice{}).Query("status", "customer_id", "collection")
	h.handle("POST", "/v1/invoicing/invoices", app, write, h.handleInvoiceCreate).In(invoicing.InvoiceIn{}).Out(201, invoicing.Invoice{})
	h.handle("GET", "/v1/invoicing/invoices/:id", app, read, h.handleInvoiceGet).Out(200, invoicing.Invoice{})
	h.handle("PATCH", "/v1/invoicing/invoices/:id", app, write, h.handleInvoiceUpdate).In(invoicing.InvoicePatch{}).Out(200, invoicing.Invoice{})
	h.handle("POST", "/v1/invoicing/invoices/:id/finalize", app, write, h.handleInvoiceFinalize).Out(200, invoicing.Invoice{})
	h.handle("POST", "/v1/invoicing/invoices/:id/send", app, write, h.handleInvoiceSend).In(invoicing.SendIn{}).Out(200, invoicing.Invoice{})
	h.handle("POST", "/v1/invoicing/invoices/:id/remind", app, write, h.handleInvoiceRemind).In(invoicing.SendIn{}).Out(200, invoicing.Invoice{})
	h.handle("POST", "/v1/invoicing/invoices/:id/pay", app, write, h.handleInvoicePay).In(invoicing.PayIn{}).Out(200, invoicing.Invoice{})
	h.handle("POST", "/v1/invoicing/invoices/:id/void", app, write, h.handleInvoiceVoid).In(invoicing.NoteIn{}).Out(200, invoicing.Invoice{})
	h.handle("POST", "/v1/invoicing/invoices/:id/mark-uncollectible", app, write, h.handleInvoiceUncollectible).In(invoicing.NoteIn{}).Out(200, invoicing.Invoice{})
	h.handle("GET", "/v1/invoicing/invoices/:id/events", app, read, h.handleInvoiceEvents).Out(200, []invoicing.Event{})
	h.handle("GET", "/v1/invoicing/invoices/:id/pdf", app, read, h.handleInvoicePDF).File(200, "application/pdf")
	h.handle("GET", "/v1/invoicing/account", app, read, h.handleAccountGet).Out(200, invoicing.Account{})
	h.handle("PATCH", "/v1/invoicing/account", app, write, h.handleAccountUpdate).In(invoicing.AccountPatch{}).Out(200, invoicing.Account{})
	h.handle("POST", "/v1/invoicing/account/connect", app, write, h.handleAccountConnect).Out(200, invoicing.Account{})
	h.handlePublic("GET", "/v1/invoicing/pay/:token", h.handlePayLinkGet).Out(200, invoicing.Checkout{})
	h.handlePublic("GET", "/v1/invoicing/pay/:token/pdf", h.handlePayLinkPDF).File(200, "application/pdf")
	h.handlePublic("POST", "/v1/invoicing/pay/:token", h.handlePayLinkCheckout).In(invoicing.CheckoutIn{}).Out(200, invoicing.Checkout{})
}

// maxCustomerQ bounds GET /v1/invoicing/customers?q=, which finds the
// customers with a word of their name or email starting with it: as
// CustomerIn bounds the email, the longer of the two.
const maxCustomerQ = 320

// handleCustomersList serves GET /v1/invoicing/customers?q=&company_id=.
func (h *Handler) handleCustomersList(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	q := c.Query()
	if vs := queryTooLong(nil, "q", q.Get("q"), maxCustomerQ); len(vs) > 0 {
		return errs.Validation(vs...)
	}
	out, next, err := h.ws.Invoicing().ListCustomers(c.Context(), c.Tenant(),
		invoicing.CustomerFilter{Q: q.Get("q"), CompanyID: q.Get("company_id")}, p)
	if err != nil {
		return err
	}
	return c.List(out, next)
}

// handleCustomerCreate serves POST /v1/invoicing/customers (CustomerIn): 201.
func (h *Handler) handleCustomerCreate(c *request) error {
	var in invoicing.CustomerIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.Invoicing().CreateCustomer(c.Context(), c.Tenant(), in)
	if err != nil {
		return inBody(err)
	}
	return c.Created("/v1/invoicing/customers/"+out.ID, out)
}

// handleCustomerGet serves GET /v1/invoicing/customers/{id}.
func (h *Handler) handleCustomerGet(c *request) error {
	out, err := h.ws.Invoicing().Customer(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// handleCustomerUpdate serves PATCH /v1/invoicing/customers/{id}
// (CustomerPatch).
func (h *Handler) handleCustomerUpdate(c *request) error {
	if _, err := h.ws.Invoicing().Customer(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in invoicing.CustomerPatch
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.Invoicing().UpdateCustomer(c.Context(), c.Tenant(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, out)
}

// handleCustomerDelete serves DELETE /v1/invoicing/customers/{id}: 204; a
// customer with invoices is a 409.
func (h *Handler) handleCustomerDelete(c *request) error {
	if err := h.ws.Invoicing().DeleteCustomer(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent()
}

// handleInvoicesList serves GET /v1/invoicing/invoices?status=&customer_id=:
// a page, newest first.
func (h *Handler) handleInvoicesList(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	q := c.Query()
	out, next, err := h.ws.Invoicing().ListInvoices(c.Context(), c.Tenant(),
		invoicing.InvoiceFilter{Status: q.Get("status"), CustomerID: q.Get("customer_id")}, p)
	if err != nil {
		return err
	}
	return c.List(out, next)
}

// handleInvoiceCreate serves POST /v1/invoicing/invoices (InvoiceIn): 201
// with the draft.
func (h *Handler) handleInvoiceCreate(c *request) error {
	var in invoicing.InvoiceIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.Invoicing().CreateInvoice(c.Context(), c.Tenant(), in)
	if err != nil {
		return inBody(err)
	}
	return c.Created("/v1/invoicing/invoices/"+out.ID, out)
}

// handleInvoiceGet serves GET /v1/invoicing/invoices/{id}.
func (h *Handler) handleInvoiceGet(c *request) error {
	out, err := h.ws.Invoicing().Invoice(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// handleInvoiceUpdate serves PATCH /v1/invoicing/invoices/{id}
// (InvoicePatch); only a draft changes (409 after).
func (h *Handler) handleInvoiceUpdate(c *request) error {
	if _, err := h.ws.Invoicing().Invoice(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in invoicing.InvoicePatch
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.Invoicing().UpdateInvoice(c.Context(), c.Tenant(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, out)
}

// handleInvoiceFinalize serves POST /v1/invoicing/invoices/{id}/finalize.
func (h *Handler) handleInvoiceFinalize(c *request) error {
	if _, err := h.ws.Invoicing().Invoice(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err // another tenant's invoice is a 404 whatever the body
	}
	if err := c.noBody(); err != nil {
		return err
	}
	out, err := h.ws.Invoicing().Finalize(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// handleInvoiceSend serves POST /v1/invoicing/invoices/{id}/send ({to}).
func (h *Handler) handleInvoiceSend(c *request) error {
	if _, err := h.ws.Invoicing().Invoice(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in invoicing.SendIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.Invoicing().Send(c.Context(), c.Tenant(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, out)
}

// handleInvoiceRemind serves POST /v1/invoicing/invoices/{id}/remind ({to}):
// a reminder now, whatever the schedule says.
func (h *Handler) handleInvoiceRemind(c *request) error {
	if _, err := h.ws.Invoicing().Invoice(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in invoicing.SendIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.Invoicing().Remind(c.Context(), c.Tenant(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, out)
}

// handleInvoicePay serves POST /v1/invoicing/invoices/{id}/pay (PayIn). The
// request's Idempotency-Key is also kept on the invoice in the payment's
// transaction, so a repeat after a lost answer pays once.
func (h *Handler) handleInvoicePay(c *request) error {
	if _, err := h.ws.Invoicing().Invoice(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in invoicing.PayIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	key := ""
	if k := c.R.Header.Get("Idempotency-Key"); k != "" {
		key = invoicing.PayKey(c.P.KeyID, c.P.UserID, k)
	}
	out, err := h.ws.Invoicing().Pay(c.Context(), c.Tenant(), c.Param("id"), in, key)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, out)
}

// handleInvoiceVoid serves POST /v1/invoicing/invoices/{id}/void ({note}).
func (h *Handler) handleInvoiceVoid(c *request) error {
	return h.closeInvoice(c, h.ws.Invoicing().Void)
}

// handleInvoiceUncollectible serves POST
// /v1/invoicing/invoices/{id}/mark-uncollectible ({note}).
func (h *Handler) handleInvoiceUncollectible(c *request) error {
	return h.closeInvoice(c, h.ws.Invoicing().MarkUncollectible)
}

func (h *Handler) closeInvoice(c *request, fn func(ctx context.Context, tenant, id string, in invoicing.NoteIn) (*invoicing.Invoice, error)) error {
	if _, err := h.ws.Invoicing().Invoice(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in invoicing.NoteIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := fn(c.Context(), c.Tenant(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, out)
}

// handleInvoiceEvents serves GET /v1/invoicing/invoices/{id}/events: the
// invoice's history (InvoiceEventOut), oldest first.
func (h *Handler) handleInvoiceEvents(c *request) error {
	out, err := h.ws.Invoicing().InvoiceEvents(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.List(out, "")
}

// handleInvoicePDF serves GET /v1/invoicing/invoices/{id}/pdf:
// application/pdf.
func (h *Handler) handleInvoicePDF(c *request) error {
	b, name, err := h.ws.Invoicing().PDF(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return writePDF(c, b, name)
}

func writePDF(c *request, b []byte, name string) error {
	hd := c.W.Header()
	hd.Set("Content-Type", "application/pdf")
	hd.Set("Content-Length", strconv.Itoa(len(b)))
	hd.Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": name}))
	hd.Set("X-Content-Type-Options", "nosniff")
	c.W.WriteHeader(http.StatusOK)
	_, _ = c.W.Write(b)
	return nil
}

// handleAccountGet serves GET /v1/invoicing/account (AccountOut).
func (h *Handler) handleAccountGet(c *request) error {
	out, err := h.ws.Invoicing().Account(c.Context(), c.Tenant())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// handleAccountUpdate serves PATCH /v1/invoicing/account (AccountPatch).
func (h *Handler) handleAccountUpdate(c *request) error {
	var in invoicing.AccountPatch
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.Invoicing().UpdateAccount(c.Context(), c.Tenant(), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, out)
}

// handleAccountConnect serves POST /v1/invoicing/account/connect.
func (h *Handler) handleAccountConnect(c *request) error {
	if err := c.noBody(); err != nil {
		return err
	}
	out, err := h.ws.Invoicing().Connect(c.Context(), c.Tenant())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// handlePayLinkGet serves GET /v1/invoicing/pay/{token} (public): what the
// payment link shows the payer.
func (h *Handler) handlePayLinkGet(c *request) error {
	out, err := h.ws.Invoicing().PaymentLink(c.Context(), c.Param("token"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// handlePayLinkPDF serves GET /v1/invoicing/pay/{token}/pdf (public).
func (h *Handler) handlePayLinkPDF(c *request) error {
	b, name, err := h.ws.Invoicing().PaymentLinkPDF(c.Context(), c.Param("token"))
	if err != nil {
		return err
	}
	return writePDF(c, b, name)
}

// handlePayLinkCheckout serves POST /v1/invoicing/pay/{token} (public,
// CheckoutIn): the simulated checkout pays the amount due by card.
func (h *Handler) handlePayLinkCheckout(c *request) error {
	var in invoicing.CheckoutIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	out, err := h.ws.Invoicing().PayByLink(c.Context(), c.Param("token"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, out)
}
