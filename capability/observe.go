package capability

import "context"

// CallObserver sees the provider calls a Registry makes, for metrics and
// traces.
type CallObserver interface {
	// ProviderCall is called as the call to provider begins; it returns
	// the context to call the provider with (carrying a span) and a
	// function called with the call's outcome when it ends. It must not
	// block.
	ProviderCall(ctx context.Context, provider string, call Call) (context.Context, func(err error))
}
