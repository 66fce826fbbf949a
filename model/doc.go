// Package model holds the cluster API types (versioned YAML), their defaulting into a complete spec, validation
// with field paths, component config turned into flags, and the builders that turn the complete spec into tasks.
//
// model is pure: it makes no SDK calls and must not import a cloud SDK (aws-sdk-go-v2, google.golang.org/api),
// go-systemd, cloudup, nodeup, protokube or cmd. It imports tasks and engine.
package model
