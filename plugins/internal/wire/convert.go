package wire

import (
	"github.com/bas-platform/bas/capability"
	"github.com/bas-platform/bas/internal/errs"
)

// The converters between package capability's types and the wire's. Each
// copies field by field, so a field added to one side without the other is
// a compile error here or a diff in the golden test, never a silent change
// of protocol 1.

// FromInfo returns i on the wire.
func FromInfo(i capability.Info) Info {
	out := Info{ID: i.ID, Name: i.Name, Kind: string(i.Kind), Capabilities: i.Capabilities, Coming: i.Coming}
	if i.App != nil {
		a := FromApp(*i.App)
		out.App = &a
	}
	return out
}

// ToCapability returns the Info i carries.
func (i Info) ToCapability() capability.Info {
	out := capability.Info{ID: i.ID, Name: i.Name, Kind: capability.Kind(i.Kind), Capabilities: i.Capabilities, Coming: i.Coming}
	if i.App != nil {
		a := i.App.ToCapability()
		out.App = &a
	}
	return out
}

// FromApp returns a on the wire.
func FromApp(a capability.App) App {
	return App{
		ID: a.ID, Name: a.Name, API: API{Prefix: a.API.Prefix},
		Events:       Events{Emits: a.Events.Emits, Consumes: a.Events.Consumes},
		Capabilities: a.Capabilities,
	}
}

// ToCapability returns the App a carries.
func (a App) ToCapability() capability.App {
	return capability.App{
		ID: a.ID, Name: a.Name, API: capability.API{Prefix: a.API.Prefix},
		Events:       capability.Events{Emits: a.Events.Emits, Consumes: a.Events.Consumes},
		Capabilities: a.Capabilities,
	}
}

// FromCapabilities returns cs on the wire; nil stays nil.
func FromCapabilities(cs []capability.Capability) []Capability {
	if cs == nil {
		return nil
	}
	out := make([]Capability, len(cs))
	for i, c := range cs {
		out[i] = Capability{ID: c.ID, Name: c.Name, Description: c.Description, Args: c.Args, Result: c.Result}
	}
	return out
}

// ToCapabilities returns the capabilities cs carries; nil stays nil.
func ToCapabilities(cs []Capability) []capability.Capability {
	if cs == nil {
		return nil
	}
	out := make([]capability.Capability, len(cs))
	for i, c := range cs {
		out[i] = capability.Capability{ID: c.ID, Name: c.Name, Description: c.Description, Args: c.Args, Result: c.Result}
	}
	return out
}

// FromCall returns c on the wire.
func FromCall(c capability.Call) Call {
	return Call{Tenant: c.Tenant, Capability: c.Capability, Args: c.Args, IdempotencyKey: c.IdempotencyKey}
}

// ToCapability returns the Call c carries.
func (c Call) ToCapability() capability.Call {
	return capability.Call{Tenant: c.Tenant, Capability: c.Capability, Args: c.Args, IdempotencyKey: c.IdempotencyKey}
}

// FromHealth returns h on the wire.
func FromHealth(h capability.Health) Health {
	return Health{Status: h.Status, Detail: h.Detail}
}

// ToCapability returns the Health h carries.
func (h Health) ToCapability() capability.Health {
	return capability.Health{Status: h.Status, Detail: h.Detail}
}

// FromEvent returns e on the wire.
func FromEvent(e capability.Event) Event {
	return Event{Tenant: e.Tenant, Name: e.Name, Data: e.Data}
}

// ToCapability returns the Event e carries.
func (e Event) ToCapability() capability.Event {
	return capability.Event{Tenant: e.Tenant, Name: e.Name, Data: e.Data}
}

// violationsFrom returns vs on the wire; nil stays nil.
func violationsFrom(vs []errs.Violation) []Violation {
	if vs == nil {
		return nil
	}
	out := make([]Violation, len(vs))
	for i, v := range vs {
		out[i] = Violation{Loc: v.Loc, Msg: v.Msg, Type: v.Type}
	}
	return out
}
