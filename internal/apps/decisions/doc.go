// Package decisions keeps a workspace's decisions (interface.md 2.8): named
// choices AI makes, each with the JSON Schemas of its input and output and
// the thresholds that turn a confidence into a mode (auto, suggest,
// manual).
//
// # Evaluating
//
// Service.Evaluate validates an input against the decision's input_schema
// and calls the decision.evaluate capability through the registry, so a
// workspace may bind it to its own provider. The built-in Provider needs no
// model: it answers with what people confirmed for the same input before
// (see Provider for the matching rules). Every evaluation is recorded as a
// Case.
//
// # Feedback and agreement
//
// Feedback judges cases: agree confirms the proposed output, disagree marks
// it wrong and, with an outcome, corrects it; confirmed outcomes are what
// the built-in provider learns from. Every judgement is a Verdict in the
// agreement ledger (RecordVerdict), which the automation gate also writes
// for each approval of an AI action a person decides (unchanged: agreed;
// rejected or edited: disagreed). Summarize gives the Agreement of a scope
// (a decision, a process) from counters, and AgreementRate the workspace's
// share of agreeing verdicts over the last 30 days (the cockpit's
// agreement_rate).
package decisions
