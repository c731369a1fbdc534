// Package crm is the built-in CRM app: companies, contacts, deals on
// pipelines with a board view, and activities.
//
// # Records
//
// Company, Contact, Deal and Activity are interface.md's Out records
// (section 2.12) with created_at and updated_at; CompanyIn, ContactIn,
// DealIn and ActivityIn create them and the Patch types change them (only
// the keys present apply; null clears a nullable field). Every bound of
// interface.md section 8 is checked by Validate, which reports every
// violation at once. References are checked in the transaction that
// writes them: a missing company, contact, deal, stage or pipeline, or an
// owner that is not a member of the workspace, is a 422 naming the field.
// Deleting a company sets the company_id of its contacts, deals and
// activities to null in the same transaction; deleting a contact or a
// deal does the same for their references.
//
// # Pipelines and the board
//
// A pipeline holds ordered stages {id, name, position, probability, kind:
// open, won or lost}. Every workspace has a default pipeline, "Sales"
// (Lead, Qualified, Proposal, Negotiation, Won, Lost), made the first time
// it is needed. A deal without a stage lands in the first open stage of
// its pipeline (the default one unless named). Moving a deal is a patch of
// its stage_id; entering a won or lost stage sets closed_at, leaving it
// for an open stage clears it. A stage, or a pipeline, holding deals
// cannot be deleted (409).
//
// Each stage keeps counters in one key: per currency, its number of deals
// and the sum of their amounts, changed in the transaction that changes a
// deal. Board reads them, so its totals never sum deals; each column holds
// the newest deals of its stage, read from an index.
//
// # Lists
//
// Every list is one walk of an index: deals by pipeline, stage, status,
// company, contact, owner (alone, or with a pipeline, a stage or a
// status); contacts by
// company, owner or lifecycle; companies by owner; activities by deal,
// contact or company (newest first by occurred_at). Q is a prefix search
// over normalized text (lowercase, punctuation as spaces) kept in an index
// of its own: company names and domains, contact names and e-mail
// addresses, deal titles.
//
// # Events and capabilities
//
// crm.company.created, crm.contact.created, crm.deal.created,
// crm.deal.stage_changed, crm.deal.won, crm.deal.lost and
// crm.activity.logged are written through the EventSink in the
// transaction that makes the change; their data is the record's fields
// plus its id under company_id, contact_id, deal_id or activity_id (and
// the stage's name, kind and probability for deals). Provider fills the
// crm.* capabilities.
//
// Violations (a 422) are located at the inputs' field names (["stages", 0,
// "name"]; an activity's own field ["body"]); the HTTP API puts them under
// "body" (an activity's body field at ["body", "body"]).
package crm
