package httpapi

// registerRoutes declares every route. Each area registers its routes in its
// own file (registerXRoutes); the table is built from the declarations.
func (h *Handler) registerRoutes() {
	h.registerSystemRoutes()
	h.registerRunRoutes()
	h.registerTaskAssignRoutes()
	h.registerStreamRoutes()
	h.registerStartedRunsRoutes()
	h.registerFilterRoutes()
	h.registerRunControlRoutes()
	h.registerWhatIfRoutes()
	h.registerProcessRoutes()
	h.registerAccessRoutes()
	h.registerMailRoutes()
	h.registerCapabilityRoutes()
	h.registerAutomationRoutes()
	h.registerDecisionRoutes()
	h.registerDocsRoutes()
	h.registerTemplateRoutes()
	h.registerUseCaseRoutes()
	h.registerBoardsRoutes()
	h.registerCRMRoutes()
	h.registerInvoicingRoutes()
	h.registerWebhookRoutes()
	h.registerAIRoutes()
}
