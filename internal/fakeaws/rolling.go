package fakeaws

import (
	"net/url"
	"time"
)

// TerminateInstanceInAutoScalingGroup, what a rolling update replaces a machine with: the instance is terminated
// (its volumes detached, as EC2 does), and unless ShouldDecrementDesiredCapacity the group launches its
// replacement at once, from the group's current template version, as Auto Scaling does some seconds later.
// With ShouldDecrementDesiredCapacity the desired capacity goes down by one, refused below the group's minimum.

func init() {
	asgActions["TerminateInstanceInAutoScalingGroup"] = (*Server).terminateInASG
}

type asgActivityXML struct {
	ActivityID           string `xml:"ActivityId"`
	AutoScalingGroupName string `xml:"AutoScalingGroupName"`
	Description          string `xml:"Description"`
	Cause                string `xml:"Cause"`
	StartTime            string `xml:"StartTime"`
	StatusCode           string `xml:"StatusCode"`
	Progress             int32  `xml:"Progress"`
}

func (s *Server) terminateInASG(region string, form url.Values) (any, error) {
	id := form.Get("InstanceId")
	if id == "" {
		return nil, validation("InstanceId is required")
	}
	decrement, ok, err := boolParam(form, "ShouldDecrementDesiredCapacity")
	if err != nil || !ok {
		return nil, validation("ShouldDecrementDesiredCapacity is required (true or false)")
	}
	i, ok := s.ec2.instances[id]
	if !ok || i.region != region || i.state == "terminated" {
		return nil, validation("Instance Id not found - No managed instance found for instance ID: %s", id)
	}
	g, ok := s.asg.groups[i.group]
	if !ok {
		return nil, validation("Instance Id not found - No managed instance found for instance ID: %s", id)
	}
	if decrement {
		if g.desired-1 < g.min {
			return nil, validation("Currently, desiredCapacity=%d and minSize=%d, terminating instance without replacement will violate group's min size constraint. Either set shouldDecrementDesiredCapacity flag to false or lower group's min size.", g.desired, g.min)
		}
		g.desired--
	}
	s.terminate(i)
	s.reconcileGroup(g)
	cause := "an instance was taken out of service in response to a user request"
	if !decrement {
		cause += ", and a replacement was launched"
	}
	return struct {
		Activity asgActivityXML `xml:"Activity"`
	}{asgActivityXML{
		ActivityID: s.newID("act"), AutoScalingGroupName: g.name, Description: "Terminating EC2 instance: " + id,
		Cause: cause, StartTime: time.Now().UTC().Format(time.RFC3339), StatusCode: "InProgress", Progress: 0,
	}}, nil
}
