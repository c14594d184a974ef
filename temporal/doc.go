// Package temporal runs the agent loop as a Temporal workflow: Runtime is
// the agent.Runtime of workflow code, Registry holds what a worker runs (the
// agents, and the models and tools whose calls are activities), and
// RunAgent is the workflow of one run. See docs/TEMPORAL.md.
package temporal
