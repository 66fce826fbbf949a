// Package cloudgraph builds what every cloud's graph holds, which `kubeup update cluster` runs: the API's
// placeholder DNS records, the keystore of tasks/pkitasks, the complete spec and the node configurations in the
// state store (AddCommonTasks, StaleNodeConfigs); and the local provider's graph, BuildLocalCloudGraph. Each other
// provider's graph builder lives in the provider's package (providers/<cloud>) and calls AddCommonTasks.
//
// cloudgraph imports model, engine and the task packages common to all clouds. It must not import a cloud's task
// package (tasks/awstasks, tasks/gcetasks) or SDK, cloudup, nodeup, protokube or cmd; nodeup and protokube must not
// import it (test/imports).
package cloudgraph
