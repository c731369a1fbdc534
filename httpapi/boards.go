package httpapi

import (
	"net/http"

	"github.com/bas-platform/bas/internal/apps/access"
	"github.com/bas-platform/bas/internal/apps/boards"
)

// The boards app (api.md sections 5 and 6, boards rows). Reading needs
// boards.read; every change needs boards.write. A board's parts
// (statuses, columns, groups, items) live under it: an id of another
// board's part is a 404 like any missing record. The board and the part
// are looked up before a body is read, so a missing one is a 404 whatever
// the body holds.
func (h *Handler) registerBoardsRoutes() {
	app := access.AppBoards
	read, write := access.PermBoardsRead, access.PermBoardsWrite
	h.handle("GET", "/v1/boards", app, read, h.handleBoardsList).List(boards.Board{})
	h.handle("POST", "/v1/boards", app, write, h.handleBoardCreate).In(boards.BoardIn{}).Out(201, boards.Detail{})
	h.handle("GET", "/v1/boards/:id", app, read, h.handleBoardGet).Out(200, boards.Detail{})
	h.handle("PATCH", "/v1/boards/:id", app, write, h.handleBoardUpdate).In(boards.BoardPatch{}).Out(200, boards.Detail{})
	h.handle("DELETE", "/v1/boards/:id", app, write, h.handleBoardDelete).Out(204, nil)

	h.handle("GET", "/v1/boards/:id/statuses", app, read, h.handleBoardStatusesList).Out(200, []boards.Status{})
	h.handle("POST", "/v1/boards/:id/statuses", app, write, h.handleBoardStatusCreate).In(boards.StatusIn{}).Out(201, boards.Status{})
	h.handle("GET", "/v1/boards/:id/statuses/:part_id", app, read, h.handleBoardStatusGet).Out(200, boards.Status{})
	h.handle("PATCH", "/v1/boards/:id/statuses/:part_id", app, write, h.handleBoardStatusUpdate).In(boards.StatusPatch{}).Out(200, boards.Status{})
	h.handle("DELETE", "/v1/boards/:id/statuses/:part_id", app, write, h.handleBoardStatusDelete).Out(204, nil).Query("move_to")

	h.handle("GET", "/v1/boards/:id/columns", app, read, h.handleBoardColumnsList).Out(200, []boards.Column{})
	h.handle("POST", "/v1/boards/:id/columns", app, write, h.handleBoardColumnCreate).In(boards.ColumnIn{}).Out(201, boards.Column{})
	h.handle("GET", "/v1/boards/:id/columns/:part_id", app, read, h.handleBoardColumnGet).Out(200, boards.Column{})
	h.handle("PATCH", "/v1/boards/:id/columns/:part_id", app, write, h.handleBoardColumnUpdate).In(boards.ColumnPatch{}).Out(200, boards.Column{})
	h.handle("DELETE", "/v1/boards/:id/columns/:part_id", app, write, h.handleBoardColumnDelete).Out(204, nil)

	h.handle("GET", "/v1/boards/:id/groups", app, read, h.handleBoardGroupsList).Out(200, []boards.Group{})
	h.handle("POST", "/v1/boards/:id/groups", app, write, h.handleBoardGroupCreate).In(boards.GroupIn{}).Out(201, boards.Group{})
	h.handle("GET", "/v1/boards/:id/groups/:part_id", app, read, h.handleBoardGroupGet).Out(200, boards.Group{})
	h.handle("PATCH", "/v1/boards/:id/groups/:part_id", app, write, h.handleBoardGroupUpdate).In(boards.GroupPatch{}).Out(200, boards.Group{})
	h.handle("DELETE", "/v1/boards/:id/groups/:part_id", app, write, h.handleBoardGroupDelete).Out(204, nil).Query("move_to")

	h.handle("GET", "/v1/boards/:id/items", app, read, h.handleBoardItemsList).List(boards.Item{}).Query("status_id", "group_id", "assignee_id", "q")
	h.handle("POST", "/v1/boards/:id/items", app, write, h.handleBoardItemCreate).In(boards.ItemIn{}).Out(201, boards.Item{})
	h.handle("GET", "/v1/boards/:id/items/:part_id", app, read, h.handleBoardItemGet).Out(200, boards.Item{})
	h.handle("PATCH", "/v1/boards/:id/items/:part_id", app, write, h.handleBoardItemUpdate).In(boards.ItemPatch{}).Out(200, boards.Item{})
	h.handle("DELETE", "/v1/boards/:id/items/:part_id", app, write, h.handleBoardItemDelete).Out(204, nil)
}

func boardPath(c *request, parts ...string) string {
	p := "/v1/boards/" + c.Param("id")
	for _, s := range parts {
		p += "/" + s
	}
	return p
}

// handleBoardsList serves GET /v1/boards: a page of boards, newest first.
func (h *Handler) handleBoardsList(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	out, next, err := h.ws.Boards().ListBoards(c.Context(), c.Tenant(), p)
	if err != nil {
		return err
	}
	return c.List(out, next)
}

// handleBoardCreate serves POST /v1/boards (BoardIn): 201 with the
// BoardDetail.
func (h *Handler) handleBoardCreate(c *request) error {
	var in boards.BoardIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	d, err := h.ws.Boards().CreateBoard(c.Context(), c.Tenant(), in)
	if err != nil {
		return inBody(err)
	}
	return c.Created("/v1/boards/"+d.ID, d)
}

// handleBoardGet serves GET /v1/boards/{id}: the BoardDetail.
func (h *Handler) handleBoardGet(c *request) error {
	d, err := h.ws.Boards().GetBoard(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

// handleBoardUpdate serves PATCH /v1/boards/{id} (BoardPatch).
func (h *Handler) handleBoardUpdate(c *request) error {
	if _, err := h.ws.Boards().GetBoard(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	var in boards.BoardPatch
	if err := c.Decode(&in); err != nil {
		return err
	}
	d, err := h.ws.Boards().UpdateBoard(c.Context(), c.Tenant(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, d)
}

// handleBoardDelete serves DELETE /v1/boards/{id}: 204; the board's items
// go with it.
func (h *Handler) handleBoardDelete(c *request) error {
	if err := h.ws.Boards().DeleteBoard(c.Context(), c.Tenant(), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent()
}

// boardFirst answers 404 when the board of the path is not the caller's.
func (h *Handler) boardFirst(c *request) error {
	_, err := h.ws.Boards().GetBoard(c.Context(), c.Tenant(), c.Param("id"))
	return err
}

// ---- statuses

// handleBoardStatusesList serves GET /v1/boards/{id}/statuses: every
// status in position order (not paged).
func (h *Handler) handleBoardStatusesList(c *request) error {
	out, err := h.ws.Boards().ListStatuses(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.List(out, "")
}

// handleBoardStatusCreate serves POST /v1/boards/{id}/statuses (StatusIn).
func (h *Handler) handleBoardStatusCreate(c *request) error {
	if err := h.boardFirst(c); err != nil {
		return err
	}
	var in boards.StatusIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	st, err := h.ws.Boards().CreateStatus(c.Context(), c.Tenant(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.Created(boardPath(c, "statuses", st.ID), st)
}

// handleBoardStatusGet serves GET /v1/boards/{id}/statuses/{part_id}.
func (h *Handler) handleBoardStatusGet(c *request) error {
	st, err := h.ws.Boards().GetStatus(c.Context(), c.Tenant(), c.Param("id"), c.Param("part_id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// handleBoardStatusUpdate serves PATCH /v1/boards/{id}/statuses/{part_id}.
func (h *Handler) handleBoardStatusUpdate(c *request) error {
	if _, err := h.ws.Boards().GetStatus(c.Context(), c.Tenant(), c.Param("id"), c.Param("part_id")); err != nil {
		return err
	}
	var in boards.StatusPatch
	if err := c.Decode(&in); err != nil {
		return err
	}
	st, err := h.ws.Boards().UpdateStatus(c.Context(), c.Tenant(), c.Param("id"), c.Param("part_id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, st)
}

// handleBoardStatusDelete serves DELETE
// /v1/boards/{id}/statuses/{part_id}?move_to=: 409 while it holds items,
// unless move_to names the status they move to.
func (h *Handler) handleBoardStatusDelete(c *request) error {
	err := h.ws.Boards().DeleteStatus(c.Context(), c.Tenant(), c.Param("id"), c.Param("part_id"), c.Query().Get("move_to"))
	if err != nil {
		return err
	}
	return c.NoContent()
}

// ---- columns

// handleBoardColumnsList serves GET /v1/boards/{id}/columns: every column
// in position order (not paged).
func (h *Handler) handleBoardColumnsList(c *request) error {
	out, err := h.ws.Boards().ListColumns(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.List(out, "")
}

// handleBoardColumnCreate serves POST /v1/boards/{id}/columns (ColumnIn).
func (h *Handler) handleBoardColumnCreate(c *request) error {
	if err := h.boardFirst(c); err != nil {
		return err
	}
	var in boards.ColumnIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	col, err := h.ws.Boards().CreateColumn(c.Context(), c.Tenant(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.Created(boardPath(c, "columns", col.ID), col)
}

// handleBoardColumnGet serves GET /v1/boards/{id}/columns/{part_id}.
func (h *Handler) handleBoardColumnGet(c *request) error {
	col, err := h.ws.Boards().GetColumn(c.Context(), c.Tenant(), c.Param("id"), c.Param("part_id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, col)
}

// handleBoardColumnUpdate serves PATCH /v1/boards/{id}/columns/{part_id}.
func (h *Handler) handleBoardColumnUpdate(c *request) error {
	if _, err := h.ws.Boards().GetColumn(c.Context(), c.Tenant(), c.Param("id"), c.Param("part_id")); err != nil {
		return err
	}
	var in boards.ColumnPatch
	if err := c.Decode(&in); err != nil {
		return err
	}
	col, err := h.ws.Boards().UpdateColumn(c.Context(), c.Tenant(), c.Param("id"), c.Param("part_id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, col)
}

// handleBoardColumnDelete serves DELETE /v1/boards/{id}/columns/{part_id}.
func (h *Handler) handleBoardColumnDelete(c *request) error {
	if err := h.ws.Boards().DeleteColumn(c.Context(), c.Tenant(), c.Param("id"), c.Param("part_id")); err != nil {
		return err
	}
	return c.NoContent()
}

// ---- groups

// handleBoardGroupsList serves GET /v1/boards/{id}/groups: every group in
// position order (not paged).
func (h *Handler) handleBoardGroupsList(c *request) error {
	out, err := h.ws.Boards().ListGroups(c.Context(), c.Tenant(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.List(out, "")
}

// handleBoardGroupCreate serves POST /v1/boards/{id}/groups (GroupIn).
func (h *Handler) handleBoardGroupCreate(c *request) error {
	if err := h.boardFirst(c); err != nil {
		return err
	}
	var in boards.GroupIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	g, err := h.ws.Boards().CreateGroup(c.Context(), c.Tenant(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.Created(boardPath(c, "groups", g.ID), g)
}

// handleBoardGroupGet serves GET /v1/boards/{id}/groups/{part_id}.
func (h *Handler) handleBoardGroupGet(c *request) error {
	g, err := h.ws.Boards().GetGroup(c.Context(), c.Tenant(), c.Param("id"), c.Param("part_id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, g)
}

// handleBoardGroupUpdate serves PATCH /v1/boards/{id}/groups/{part_id}.
func (h *Handler) handleBoardGroupUpdate(c *request) error {
	if _, err := h.ws.Boards().GetGroup(c.Context(), c.Tenant(), c.Param("id"), c.Param("part_id")); err != nil {
		return err
	}
	var in boards.GroupPatch
	if err := c.Decode(&in); err != nil {
		return err
	}
	g, err := h.ws.Boards().UpdateGroup(c.Context(), c.Tenant(), c.Param("id"), c.Param("part_id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, g)
}

// handleBoardGroupDelete serves DELETE
// /v1/boards/{id}/groups/{part_id}?move_to=: 409 while it holds items,
// unless move_to names the group they move to.
func (h *Handler) handleBoardGroupDelete(c *request) error {
	err := h.ws.Boards().DeleteGroup(c.Context(), c.Tenant(), c.Param("id"), c.Param("part_id"), c.Query().Get("move_to"))
	if err != nil {
		return err
	}
	return c.NoContent()
}

// ---- items

// handleBoardItemsList serves GET
// /v1/boards/{id}/items?status_id=&group_id=&assignee_id=&q=: a page; in
// position order when filtered by status, newest first otherwise.
func (h *Handler) handleBoardItemsList(c *request) error {
	p, err := c.Page()
	if err != nil {
		return err
	}
	q := c.Query()
	f := boards.ItemFilter{StatusID: q.Get("status_id"), GroupID: q.Get("group_id"), AssigneeID: q.Get("assignee_id"), Q: q.Get("q")}
	out, next, err := h.ws.Boards().ListItems(c.Context(), c.Tenant(), c.Param("id"), f, p)
	if err != nil {
		return err
	}
	return c.List(out, next)
}

// handleBoardItemCreate serves POST /v1/boards/{id}/items (ItemIn): 201.
func (h *Handler) handleBoardItemCreate(c *request) error {
	if err := h.boardFirst(c); err != nil {
		return err
	}
	var in boards.ItemIn
	if err := c.Decode(&in); err != nil {
		return err
	}
	it, err := h.ws.Boards().CreateItem(c.Context(), c.Tenant(), c.Param("id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.Created(boardPath(c, "items", it.ID), it)
}

// handleBoardItemGet serves GET /v1/boards/{id}/items/{part_id}; the item
// may be named by id or key ("OPS-12").
func (h *Handler) handleBoardItemGet(c *request) error {
	it, err := h.ws.Boards().GetItem(c.Context(), c.Tenant(), c.Param("id"), c.Param("part_id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, it)
}

// handleBoardItemUpdate serves PATCH /v1/boards/{id}/items/{part_id}
// (ItemPatch): edits and moves.
func (h *Handler) handleBoardItemUpdate(c *request) error {
	if _, err := h.ws.Boards().GetItem(c.Context(), c.Tenant(), c.Param("id"), c.Param("part_id")); err != nil {
		return err
	}
	var in boards.ItemPatch
	if err := c.Decode(&in); err != nil {
		return err
	}
	it, err := h.ws.Boards().UpdateItem(c.Context(), c.Tenant(), c.Param("id"), c.Param("part_id"), in)
	if err != nil {
		return inBody(err)
	}
	return c.JSON(http.StatusOK, it)
}

// handleBoardItemDelete serves DELETE /v1/boards/{id}/items/{part_id}.
func (h *Handler) handleBoardItemDelete(c *request) error {
	if err := h.ws.Boards().DeleteItem(c.Context(), c.Tenant(), c.Param("id"), c.Param("part_id")); err != nil {
		return err
	}
	return c.NoContent()
}
