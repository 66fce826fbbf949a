// Package awssdk holds what every AWS SDK client kubeup makes shares, whichever binary makes it: request bodies
// the transport owns (OwnBodies) and the SDK's log lines sent to slog at debug level (Logger). It imports the
// SDK's core, no service package, so that a package using one service links that one only (test/imports holds
// the S3 state store to that); its subpackage allservices applies OwnBodies to every service kubeup uses.
// It imports nothing of kubeup.
package awssdk
