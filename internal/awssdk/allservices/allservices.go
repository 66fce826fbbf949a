// Package allservices applies awssdk.OwnBodies to the clients of every AWS service kubeup uses: EC2, Auto
// Scaling, IAM, Route53 and S3. It is for the code that makes clients of several of them (the AWS tasks,
// protokube, the tests against the fakes); it links all five, so a package that uses one service (the S3 state
// store) applies awssdk.OwnBodies to that service's options itself.
package allservices

import (
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"kubeup.dev/kubeup/internal/awssdk"
)

// ServiceOption is for aws.Config.ServiceOptions: it wraps the HTTP client of each service client made from
// the configuration (EC2, Auto Scaling, IAM, Route53, S3) in awssdk.OwnBodies, after the service has set its own
// timeouts on it. Other services' clients are left as they are.
func ServiceOption(_ string, options any) {
	switch o := options.(type) {
	case *ec2.Options:
		o.HTTPClient = awssdk.OwnBodies(o.HTTPClient)
	case *autoscaling.Options:
		o.HTTPClient = awssdk.OwnBodies(o.HTTPClient)
	case *iam.Options:
		o.HTTPClient = awssdk.OwnBodies(o.HTTPClient)
	case *route53.Options:
		o.HTTPClient = awssdk.OwnBodies(o.HTTPClient)
	case *s3.Options:
		o.HTTPClient = awssdk.OwnBodies(o.HTTPClient)
	}
}

// WithOwnedBodies returns cfg with ServiceOption added: every EC2, Auto Scaling, IAM, Route53 and S3 client made
// from it sends bodies awssdk.OwnBodies copies.
func WithOwnedBodies(cfg aws.Config) aws.Config {
	cfg.ServiceOptions = append(slices.Clip(cfg.ServiceOptions), ServiceOption)
	return cfg
}
