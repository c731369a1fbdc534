package boards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bas-platform/bas/internal/errs"
)

// Templates (BoardIn.Template).
const (
	TemplateSimple  = "simple"
	TemplateProject = "project"
	TemplateAgile   = "agile"
	TemplateService = "service"
)

// Status categories: what a status means whatever its name.
const (
	CategoryBacklog   = "backlog"
	CategoryUnstarted = "unstarted"
	CategoryStarted   = "started"
	CategoryCompleted = "completed"
	CategoryCancelled = "cancelled"
)

// Column types.
const (
	TypeText     = "text"
	TypeNumber   = "number"
	TypeDate     = "date"
	TypePerson   = "person"
	TypeStatus   = "status"
	TypeDropdown = "dropdown"
	TypeCheckbox = "checkbox"
	TypeLink     = "link"
)

// Bounds.
const (
	MaxBoardNameLen   = 160
	MaxDescriptionLen = 5000
	MaxPartNameLen    = 80
	MaxStatuses       = 50
	MaxColumns        = 100
	MaxGroups         = 100
	MaxTitleLen       = 300
	MaxItemDescLen    = 20000
	MaxTextValueLen   = 5000
	MaxLinkLen        = 2000
	MaxPersonLen      = 200
	MaxOptions        = 100
	MaxOptionLen      = 80
	MaxIDLen          = 80
	MaxQueryLen       = 200
	MaxSLAHours       = 8760
)

// Templates lists the templates, in the order the API documents them.
func Templates() []string {
	return []string{TemplateSimple, TemplateProject, TemplateAgile, TemplateService}
}

// Categories lists the status categories in their natural order.
func Categories() []string {
	return []string{CategoryBacklog, CategoryUnstarted, CategoryStarted, CategoryCompleted, CategoryCancelled}
}

// ColumnTypes lists the column types.
func ColumnTypes() []string {
	return []string{TypeText, TypeNumber, TypeDate, TypePerson, TypeStatus, TypeDropdown, TypeCheckbox, TypeLink}
}

var (
	reKey   = regexp.MustCompile(`^[A-Z][A-Z0-9]{1,9}$`)
	reColor = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)
)

// Board is a board (interface.md BoardOut) with the time it last changed.
type Board struct {
	ID          string     `json:"id"`
	WorkspaceID string     `json:"workspace_id"`
	Name        string     `json:"name"`
	Template    string     `json:"template"`
	Description *string    `json:"description"`
	Key         *string    `json:"key"`
	CreatedAt   *time.Time `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// Status is a board status: a kanban column an item is in.
type Status struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Category string `json:"category"`
	Color    string `json:"color"`
	Position int    `json:"position"`
	// ItemCount is how many items are in the status.
	ItemCount int64 `json:"item_count"`
}

// Column is a typed column of a board (interface.md ColumnOut): items keep
// a value per column in Item.Values.
type Column struct {
	ID       string         `json:"id"`
	Name     string         `json:"name"`
	Type     string         `json:"type"`
	Position int            `json:"position"`
	Settings map[string]any `json:"settings"`
}

// Group is a group of a board's items (interface.md GroupOut).
type Group struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Color    string `json:"color"`
	Position int    `json:"position"`
	// ItemCount is how many items are in the group.
	ItemCount int64 `json:"item_count"`
}

// Detail is a board with its statuses, columns and groups in position
// order (interface.md BoardDetail).
type Detail struct {
	Board
	Statuses []Status `json:"statuses"`
	Columns  []Column `json:"columns"`
	Groups   []Group  `json:"groups"`
}

// Item is one piece of work on a board.
type Item struct {
	ID          string         `json:"id"`
	BoardID     string         `json:"board_id"`
	Key         string         `json:"key"`
	Number      int64          `json:"number"`
	Title       string         `json:"title"`
	Description *string        `json:"description"`
	StatusID    string         `json:"status_id"`
	GroupID     *string        `json:"group_id"`
	Values      map[string]any `json:"values"`
	AssigneeID  *string        `json:"assignee_id"`
	// Position orders the items of a status: a rank key whose byte order
	// is the items' order (see the package comment).
	Position    string     `json:"position"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	CompletedAt *time.Time `json:"completed_at"`
}

// ---- Inputs ----------------------------------------------------------------

// nulls records which keys of a JSON object are present and which are null.
type nulls struct {
	present map[string]bool
	null    map[string]bool
}

func readNulls(b []byte) nulls {
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(b, &raw)
	n := nulls{present: map[string]bool{}, null: map[string]bool{}}
	for k, v := range raw {
		n.present[k] = true
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			n.null[k] = true
		}
	}
	return n
}

// BoardIn creates a board (interface.md BoardIn).
type BoardIn struct {
	Name        string  `json:"name" jsonschema:"required,minLength=1,maxLength=160"`
	Description *string `json:"description,omitempty" jsonschema:"nullable,maxLength=5000"`
	Key         *string `json:"key,omitempty" jsonschema:"nullable,pattern=^[A-Z][A-Z0-9]{1\\,9}$"`
	Template    string  `json:"template,omitempty" jsonschema:"enum=simple,enum=project,enum=agile,enum=service"`
	WorkspaceID *string `json:"workspace_id,omitempty" jsonschema:"nullable,maxLength=80"`
}

// NoExtraProperties marks BoardIn strict: unknown fields are a 422.
func (BoardIn) NoExtraProperties() {}

// Validate reports every violation of in, located at its field names
// (["name"]); the HTTP API puts them under "body".
func (in BoardIn) Validate() []errs.Violation {
	vs := checkLen(in.Name, 1, MaxBoardNameLen, true, "name")
	vs = append(vs, checkOptLen(in.Description, MaxDescriptionLen, "description")...)
	if in.Key != nil && !reKey.MatchString(*in.Key) {
		vs = append(vs, errs.Violation{Loc: []any{"key"}, Msg: "must be an upper-case letter then 1 to 9 upper-case letters or digits", Type: "string_pattern_mismatch"})
	}
	if in.Template != "" && !slices.Contains(Templates(), in.Template) {
		vs = append(vs, errs.Violation{Loc: []any{"template"}, Msg: "must be one of " + strings.Join(Templates(), ", "), Type: "enum"})
	}
	return vs
}

// BoardPatch changes a board (interface.md BoardPatch): only the keys
// present apply; a null description clears it, a null name is ignored.
type BoardPatch struct {
	Name        *string `json:"name,omitempty" jsonschema:"nullable,minLength=1,maxLength=160"`
	Description *string `json:"description,omitempty" jsonschema:"nullable,maxLength=5000"`
	n           nulls
}

// NoExtraProperties marks BoardPatch strict.
func (BoardPatch) NoExtraProperties() {}

// UnmarshalJSON decodes a patch and records which keys are null.
func (p *BoardPatch) UnmarshalJSON(b []byte) error {
	type plain BoardPatch
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = BoardPatch(v)
	p.n = readNulls(b)
	return nil
}

// Validate reports every violation of p, located at its field names
// (["name"]); the HTTP API puts them under "body".
func (p BoardPatch) Validate() []errs.Violation {
	var vs []errs.Violation
	if p.Name != nil {
		vs = append(vs, checkLen(*p.Name, 1, MaxBoardNameLen, true, "name")...)
	}
	return append(vs, checkOptLen(p.Description, MaxDescriptionLen, "description")...)
}

// StatusIn adds a status.
type StatusIn struct {
	Name     string  `json:"name" jsonschema:"required,minLength=1,maxLength=80"`
	Category string  `json:"category" jsonschema:"required,enum=backlog,enum=unstarted,enum=started,enum=completed,enum=cancelled"`
	Color    *string `json:"color,omitempty" jsonschema:"nullable,pattern=^#[0-9a-fA-F]{6}$"`
	// Position is the place among the statuses (0 first); beyond the end
	// or absent means last.
	Position *int `json:"position,omitempty" jsonschema:"nullable,minimum=0"`
}

// NoExtraProperties marks StatusIn strict.
func (StatusIn) NoExtraProperties() {}

// Validate reports every violation of in.
func (in StatusIn) Validate() []errs.Violation {
	vs := checkLen(in.Name, 1, MaxPartNameLen, true, "name")
	vs = append(vs, checkCategory(&in.Category, "category")...)
	vs = append(vs, checkColor(in.Color, "color")...)
	return append(vs, checkPosition(in.Position, "position")...)
}

// StatusPatch changes a status; only the keys present apply.
type StatusPatch struct {
	Name     *string `json:"name,omitempty" jsonschema:"nullable,minLength=1,maxLength=80"`
	Category *string `json:"category,omitempty" jsonschema:"nullable,enum=backlog,enum=unstarted,enum=started,enum=completed,enum=cancelled"`
	Color    *string `json:"color,omitempty" jsonschema:"nullable,pattern=^#[0-9a-fA-F]{6}$"`
	Position *int    `json:"position,omitempty" jsonschema:"nullable,minimum=0"`
}

// NoExtraProperties marks StatusPatch strict.
func (StatusPatch) NoExtraProperties() {}

// Validate reports every violation of p.
func (p StatusPatch) Validate() []errs.Violation {
	var vs []errs.Violation
	if p.Name != nil {
		vs = append(vs, checkLen(*p.Name, 1, MaxPartNameLen, true, "name")...)
	}
	vs = append(vs, checkCategory(p.Category, "category")...)
	vs = append(vs, checkColor(p.Color, "color")...)
	return append(vs, checkPosition(p.Position, "position")...)
}

// ColumnIn adds a column.
type ColumnIn struct {
	Name     string         `json:"name" jsonschema:"required,minLength=1,maxLength=80"`
	Type     string         `json:"type" jsonschema:"required,enum=text,enum=number,enum=date,enum=person,enum=status,enum=dropdown,enum=checkbox,enum=link"`
	Settings map[string]any `json:"settings,omitempty" jsonschema:"nullable"`
	Position *int           `json:"position,omitempty" jsonschema:"nullable,minimum=0"`
}

// NoExtraProperties marks ColumnIn strict.
func (ColumnIn) NoExtraProperties() {}

// Validate reports every violation of in.
func (in ColumnIn) Validate() []errs.Violation {
	vs := checkLen(in.Name, 1, MaxPartNameLen, true, "name")
	if !slices.Contains(ColumnTypes(), in.Type) {
		vs = append(vs, errs.Violation{Loc: []any{"type"}, Msg: "must be one of " + strings.Join(ColumnTypes(), ", "), Type: "enum"})
	} else {
		vs = append(vs, checkSettings(in.Type, in.Settings, "settings")...)
	}
	return append(vs, checkPosition(in.Position, "position")...)
}

// ColumnPatch changes a column's name, settings or position; its type is
// fixed (values already stored were checked against it).
type ColumnPatch struct {
	Name     *string        `json:"name,omitempty" jsonschema:"nullable,minLength=1,maxLength=80"`
	Settings map[string]any `json:"settings,omitempty" jsonschema:"nullable"`
	Position *int           `json:"position,omitempty" jsonschema:"nullable,minimum=0"`
	n        nulls
}

// NoExtraProperties marks ColumnPatch strict.
func (ColumnPatch) NoExtraProperties() {}

// UnmarshalJSON decodes a patch and records which keys are null.
func (p *ColumnPatch) UnmarshalJSON(b []byte) error {
	type plain ColumnPatch
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = ColumnPatch(v)
	p.n = readNulls(b)
	return nil
}

// Validate reports the violations p has whatever the column; settings are
// checked against the column's type when the patch is applied.
func (p ColumnPatch) Validate() []errs.Violation {
	var vs []errs.Violation
	if p.Name != nil {
		vs = append(vs, checkLen(*p.Name, 1, MaxPartNameLen, true, "name")...)
	}
	return append(vs, checkPosition(p.Position, "position")...)
}

// GroupIn adds a group.
type GroupIn struct {
	Name     string  `json:"name" jsonschema:"required,minLength=1,maxLength=80"`
	Color    *string `json:"color,omitempty" jsonschema:"nullable,pattern=^#[0-9a-fA-F]{6}$"`
	Position *int    `json:"position,omitempty" jsonschema:"nullable,minimum=0"`
}

// NoExtraProperties marks GroupIn strict.
func (GroupIn) NoExtraProperties() {}

// Validate reports every violation of in.
func (in GroupIn) Validate() []errs.Violation {
	vs := checkLen(in.Name, 1, MaxPartNameLen, true, "name")
	vs = append(vs, checkColor(in.Color, "color")...)
	return append(vs, checkPosition(in.Position, "position")...)
}

// GroupPatch changes a group; only the keys present apply.
type GroupPatch struct {
	Name     *string `json:"name,omitempty" jsonschema:"nullable,minLength=1,maxLength=80"`
	Color    *string `json:"color,omitempty" jsonschema:"nullable,pattern=^#[0-9a-fA-F]{6}$"`
	Position *int    `json:"position,omitempty" jsonschema:"nullable,minimum=0"`
}

// NoExtraProperties marks GroupPatch strict.
func (GroupPatch) NoExtraProperties() {}

// Validate reports every violation of p.
func (p GroupPatch) Validate() []errs.Violation {
	var vs []errs.Violation
	if p.Name != nil {
		vs = append(vs, checkLen(*p.Name, 1, MaxPartNameLen, true, "name")...)
	}
	vs = append(vs, checkColor(p.Color, "color")...)
	return append(vs, checkPosition(p.Position, "position")...)
}

// Placement says where an item goes in its status: right before or after
// another item of that status, or at an index (0 first; at or beyond the
// end means last). At most one may be given; none means last (for a new
// item, or one that changes status) or where it is.
type Placement struct {
	BeforeID *string `json:"before_id,omitempty" jsonschema:"nullable,maxLength=80"`
	AfterID  *string `json:"after_id,omitempty" jsonschema:"nullable,maxLength=80"`
	Index    *int    `json:"index,omitempty" jsonschema:"nullable,minimum=0"`
}

func (p Placement) given() bool { return p.BeforeID != nil || p.AfterID != nil || p.Index != nil }

func (p Placement) validate() []errs.Violation {
	n := 0
	var last string
	for k, set := range map[string]bool{"before_id": p.BeforeID != nil, "after_id": p.AfterID != nil, "index": p.Index != nil} {
		if set {
			n++
			if k > last {
				last = k
			}
		}
	}
	var vs []errs.Violation
	if n > 1 {
		vs = append(vs, errs.Violation{Loc: []any{last}, Msg: "give at most one of before_id, after_id and index", Type: "value_error"})
	}
	if p.Index != nil && *p.Index < 0 {
		vs = append(vs, errs.Violation{Loc: []any{"index"}, Msg: "must be at least 0", Type: "greater_than_equal"})
	}
	return vs
}

// ItemIn creates an item. StatusID defaults to the board's first status.
type ItemIn struct {
	Title       string         `json:"title" jsonschema:"required,minLength=1,maxLength=300"`
	Description *string        `json:"description,omitempty" jsonschema:"nullable,maxLength=20000"`
	StatusID    *string        `json:"status_id,omitempty" jsonschema:"nullable,maxLength=80"`
	GroupID     *string        `json:"group_id,omitempty" jsonschema:"nullable,maxLength=80"`
	AssigneeID  *string        `json:"assignee_id,omitempty" jsonschema:"nullable,maxLength=200"`
	Values      map[string]any `json:"values,omitempty" jsonschema:"nullable"`
	Placement
}

// NoExtraProperties marks ItemIn strict.
func (ItemIn) NoExtraProperties() {}

// Validate reports the violations in has whatever the board.
func (in ItemIn) Validate() []errs.Violation {
	vs := checkLen(in.Title, 1, MaxTitleLen, true, "title")
	vs = append(vs, checkOptLen(in.Description, MaxItemDescLen, "description")...)
	vs = append(vs, checkOptLen(in.AssigneeID, MaxPersonLen, "assignee_id")...)
	return append(vs, in.Placement.validate()...)
}

// ItemPatch changes an item; only the keys present apply. A null
// description, group_id or assignee_id clears it; in values a null clears
// that column's value and columns left out keep theirs. Changing status_id
// or group_id, or giving a placement, moves the item.
type ItemPatch struct {
	Title       *string        `json:"title,omitempty" jsonschema:"nullable,minLength=1,maxLength=300"`
	Description *string        `json:"description,omitempty" jsonschema:"nullable,maxLength=20000"`
	StatusID    *string        `json:"status_id,omitempty" jsonschema:"nullable,maxLength=80"`
	GroupID     *string        `json:"group_id,omitempty" jsonschema:"nullable,maxLength=80"`
	AssigneeID  *string        `json:"assignee_id,omitempty" jsonschema:"nullable,maxLength=200"`
	Values      map[string]any `json:"values,omitempty" jsonschema:"nullable"`
	Placement
	n nulls
}

// NoExtraProperties marks ItemPatch strict.
func (ItemPatch) NoExtraProperties() {}

// UnmarshalJSON decodes a patch and records which keys are null.
func (p *ItemPatch) UnmarshalJSON(b []byte) error {
	type plain ItemPatch
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = ItemPatch(v)
	p.n = readNulls(b)
	return nil
}

// Validate reports the violations p has whatever the board.
func (p ItemPatch) Validate() []errs.Violation {
	var vs []errs.Violation
	if p.Title != nil {
		vs = append(vs, checkLen(*p.Title, 1, MaxTitleLen, true, "title")...)
	}
	vs = append(vs, checkOptLen(p.Description, MaxItemDescLen, "description")...)
	vs = append(vs, checkOptLen(p.AssigneeID, MaxPersonLen, "assignee_id")...)
	return append(vs, p.Placement.validate()...)
}

// ItemFilter selects the items of a list. Empty fields select all.
type ItemFilter struct {
	StatusID   string
	GroupID    string
	AssigneeID string
	// Q matches items whose title or key holds every word of it (whole
	// words, case-insensitive).
	Q string
}

// ---- checks ------------------------------------------------------------

func checkLen(s string, min, max int, trim bool, loc ...any) []errs.Violation {
	if trim {
		s = strings.TrimSpace(s)
	}
	n := utf8.RuneCountInString(s)
	switch {
	case n < min:
		return []errs.Violation{{Loc: loc, Msg: fmt.Sprintf("must be at least %d character", min), Type: "string_too_short"}}
	case n > max:
		return []errs.Violation{{Loc: loc, Msg: fmt.Sprintf("must be at most %d characters", max), Type: "string_too_long"}}
	}
	return nil
}

func checkOptLen(s *string, max int, loc ...any) []errs.Violation {
	if s != nil && utf8.RuneCountInString(*s) > max {
		return []errs.Violation{{Loc: loc, Msg: fmt.Sprintf("must be at most %d characters", max), Type: "string_too_long"}}
	}
	return nil
}

func checkCategory(c *string, loc ...any) []errs.Violation {
	if c != nil && !slices.Contains(Categories(), *c) {
		return []errs.Violation{{Loc: loc, Msg: "must be one of " + strings.Join(Categories(), ", "), Type: "enum"}}
	}
	return nil
}

func checkColor(c *string, loc ...any) []errs.Violation {
	if c != nil && !reColor.MatchString(*c) {
		return []errs.Violation{{Loc: loc, Msg: "must be a color #RRGGBB", Type: "string_pattern_mismatch"}}
	}
	return nil
}

func checkPosition(p *int, loc ...any) []errs.Violation {
	if p != nil && *p < 0 {
		return []errs.Violation{{Loc: loc, Msg: "must be at least 0", Type: "greater_than_equal"}}
	}
	return nil
}
