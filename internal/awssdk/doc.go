// Package awssdk holds what every AWS SDK client kubeup makes shares, whichever binary makes it: request bodies
// the transport owns (OwnBodies, ServiceOption) and the SDK's log lines sent to slog at debug level (Logger).
// It imports the SDK's service packages kubeup uses and nothing of kubeup.
package awssdk
