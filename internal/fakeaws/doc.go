// Package fakeaws is an in-memory AWS that speaks the real wire protocols on one address, for tests and demos:
// EC2 (volumes, VPCs and their route tables, instances, ...) and Auto Scaling (Query), IAM (Query, instance
// profiles), Route53 (REST-XML), S3 (what the state store needs) and IMDSv2 (the identity of a chosen fake
// instance). The AWS SDK reaches it through AWS_ENDPOINT_URL, the AWS CLI through --endpoint-url; either is its
// referee.
//
// It is laid out like the cloud: one file per service or protocol (ec2.go, autoscaling.go, iam.go, route53.go,
// s3.go, imds.go), one in-memory state behind one lock (Server.mu), and call counting and fault injection as a
// wrapper around the handlers (server.go, faults.go), not sprinkled through them. What the fakes share of that
// wrapper (counts, the seeded faults, the control endpoints, the command's loop) is internal/fakecontrol's; here
// are AWS's parts: the operation a request is, the services faults apply to, the throttling answers, Mutating, and
// the faults of eventual consistency. Every Describe* of EC2 and Auto Scaling that pages (volumes, VPCs, subnets,
// security groups and their rules, images, launch templates and their versions, instances, tags; groups, their
// tags and instances) lists through one helper (describe.go): its filters, checked against its names, what it
// names, one page of those its filters pass.
//
// Control endpoints, beside the APIs (fakecontrol.Control): GET /__fake/calls returns per-operation call counts
// as a JSON object ({"DescribeVolumes": 3, ...}), and under "__throttled" how many of them were answered with a
// throttling error when any were (Server.Throttled); POST /__fake/reset-calls zeroes them; POST /__fake/faults
// sets the fault injection (a JSON Faults); POST /__fake/imds-instance?id=i-... chooses the instance IMDS answers
// for.
//
// Runnable standalone: go run ./internal/fakeaws/cmd/fakeaws --listen 127.0.0.1:PORT.
package fakeaws
