package fakeaws

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/google/go-cmp/cmp"
)

func TestIAMInstanceProfiles(t *testing.T) {
	ctx := context.Background()
	s, srv := startFakeAWS(t)
	cfg := testAWSConfig(srv.URL)
	cfg.Region = "eu-west-3" // IAM is global: any region signs for the same account
	c := iam.NewFromConfig(cfg)

	_, err := c.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("kubeup")})
	var noEntity *types.NoSuchEntityException
	if !errors.As(err, &noEntity) {
		t.Fatalf("GetInstanceProfile of none: %v; want NoSuchEntity", err)
	}

	created, err := c.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("kubeup")})
	if err != nil {
		t.Fatalf("CreateInstanceProfile: %v", err)
	}
	p := created.InstanceProfile
	if aws.ToString(p.Arn) != "arn:aws:iam::"+AccountID+":instance-profile/kubeup" || !strings.HasPrefix(aws.ToString(p.InstanceProfileId), "AIPA") ||
		aws.ToString(p.Path) != "/" || p.CreateDate == nil {
		t.Errorf("created %+v", p)
	}
	_, err = c.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("kubeup")})
	var exists *types.EntityAlreadyExistsException
	if !errors.As(err, &exists) {
		t.Errorf("CreateInstanceProfile again: %v; want EntityAlreadyExists", err)
	}

	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}`
	role, err := c.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("nodes"), AssumeRolePolicyDocument: aws.String(policy)})
	if err != nil {
		t.Fatalf("CreateRole: %v", err)
	}
	if aws.ToString(role.Role.Arn) != "arn:aws:iam::"+AccountID+":role/nodes" {
		t.Errorf("role ARN %s", aws.ToString(role.Role.Arn))
	}
	if _, err := c.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("kubeup"), RoleName: aws.String("nodes")}); err != nil {
		t.Fatalf("AddRoleToInstanceProfile: %v", err)
	}
	_, err = c.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("kubeup"), RoleName: aws.String("nodes")})
	var limit *types.LimitExceededException
	if !errors.As(err, &limit) {
		t.Errorf("a second role: %v; want LimitExceeded", err)
	}

	got, err := c.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("kubeup")})
	if err != nil {
		t.Fatalf("GetInstanceProfile: %v", err)
	}
	if len(got.InstanceProfile.Roles) != 1 || aws.ToString(got.InstanceProfile.Roles[0].RoleName) != "nodes" ||
		aws.ToString(got.InstanceProfile.Arn) != aws.ToString(p.Arn) {
		t.Errorf("GetInstanceProfile: %+v", got.InstanceProfile)
	}

	for _, name := range []string{"b", "a", "c"} {
		if _, err := c.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(name), Path: aws.String("/kubeup/")}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for pages := iam.NewListInstanceProfilesPaginator(c, &iam.ListInstanceProfilesInput{MaxItems: aws.Int32(2)}); pages.HasMorePages(); {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatalf("ListInstanceProfiles: %v", err)
		}
		for _, p := range page.InstanceProfiles {
			names = append(names, aws.ToString(p.Arn))
		}
	}
	arn := "arn:aws:iam::" + AccountID + ":instance-profile"
	if diff := cmp.Diff([]string{arn + "/kubeup/a", arn + "/kubeup/b", arn + "/kubeup/c", arn + "/kubeup"}, names); diff != "" {
		t.Errorf("ListInstanceProfiles (-want +got):\n%s", diff)
	}
	byPath, err := c.ListInstanceProfiles(ctx, &iam.ListInstanceProfilesInput{PathPrefix: aws.String("/kubeup/")})
	if err != nil || len(byPath.InstanceProfiles) != 3 {
		t.Errorf("ListInstanceProfiles under /kubeup/: %v, %d profiles; want 3", err, len(byPath.InstanceProfiles))
	}

	_, err = c.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String("kubeup")})
	var conflict *types.DeleteConflictException
	if !errors.As(err, &conflict) {
		t.Errorf("DeleteInstanceProfile with a role: %v; want DeleteConflict", err)
	}
	if _, err := c.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String("kubeup"), RoleName: aws.String("nodes")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String("kubeup")}); err != nil {
		t.Fatalf("DeleteInstanceProfile: %v", err)
	}
	if _, err := c.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("kubeup")}); !errors.As(err, &noEntity) {
		t.Errorf("GetInstanceProfile of a deleted profile: %v; want NoSuchEntity", err)
	}
	if calls := s.Calls(); calls["GetInstanceProfile"] != 3 || calls["CreateInstanceProfile"] != 5 || calls["ListInstanceProfiles"] != 3 {
		t.Errorf("calls %v", calls)
	}
}
