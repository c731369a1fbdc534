package boards

// The colors a status gets by category when none is given.
var categoryColors = map[string]string{
	CategoryBacklog:   "#94A3B8",
	CategoryUnstarted: "#64748B",
	CategoryStarted:   "#F59E0B",
	CategoryCompleted: "#22C55E",
	CategoryCancelled: "#EF4444",
}

// defaultGroupColor is the color of a group created without one.
const defaultGroupColor = "#3B82F6"

// shape is a template's starting statuses, columns and groups.
type shape struct {
	statuses []StatusIn
	columns  []ColumnIn
	groups   []GroupIn
}

func color(c string) *string { return &c }

// templateShape returns the starting shape of a template (simple for an
// unknown one, which validation has refused before).
func templateShape(template string) shape {
	st := func(name, category, c string) StatusIn {
		return StatusIn{Name: name, Category: category, Color: color(c)}
	}
	col := func(name, typ string, settings map[string]any) ColumnIn {
		return ColumnIn{Name: name, Type: typ, Settings: settings}
	}
	switch template {
	case TemplateProject:
		return shape{
			statuses: []StatusIn{
				st("To do", CategoryUnstarted, "#64748B"),
				st("In progress", CategoryStarted, "#F59E0B"),
				st("Done", CategoryCompleted, "#22C55E"),
			},
			columns: []ColumnIn{
				col("Owner", TypePerson, nil),
				col("Status", TypeStatus, map[string]any{"labels": []any{
					map[string]any{"name": "On track", "color": "#22C55E"},
					map[string]any{"name": "At risk", "color": "#F59E0B"},
					map[string]any{"name": "Off track", "color": "#EF4444"},
				}}),
				col("Due", TypeDate, nil),
				col("Notes", TypeText, nil),
				col("Estimate", TypeNumber, map[string]any{"min": 0, "unit": "hours"}),
			},
			groups: []GroupIn{{Name: "This week", Color: color("#3B82F6")}, {Name: "Later", Color: color("#A855F7")}},
		}
	case TemplateAgile:
		return shape{
			statuses: []StatusIn{
				st("Backlog", CategoryBacklog, "#94A3B8"),
				st("Selected", CategoryUnstarted, "#64748B"),
				st("In progress", CategoryStarted, "#F59E0B"),
				st("Review", CategoryStarted, "#8B5CF6"),
				st("Done", CategoryCompleted, "#22C55E"),
			},
			columns: []ColumnIn{
				col("Points", TypeNumber, map[string]any{"min": 0}),
				col("Sprint", TypeDropdown, map[string]any{"options": []any{"Sprint 1", "Sprint 2", "Sprint 3"}}),
			},
		}
	case TemplateService:
		return shape{
			statuses: []StatusIn{
				st("Waiting for support", CategoryUnstarted, "#64748B"),
				st("In progress", CategoryStarted, "#F59E0B"),
				st("Waiting for customer", CategoryStarted, "#8B5CF6"),
				st("Resolved", CategoryCompleted, "#22C55E"),
				st("Closed", CategoryCompleted, "#16A34A"),
			},
			columns: []ColumnIn{
				col("Priority", TypeDropdown, map[string]any{"options": []any{"Low", "Medium", "High", "Urgent"}}),
				col("Requester", TypeText, nil),
				col("Response due", TypeDate, map[string]any{"sla_hours": 4}),
				col("Resolution due", TypeDate, map[string]any{"sla_hours": 48}),
			},
		}
	}
	return shape{statuses: []StatusIn{
		st("To do", CategoryUnstarted, "#64748B"),
		st("In progress", CategoryStarted, "#F59E0B"),
		st("Done", CategoryCompleted, "#22C55E"),
	}}
}
