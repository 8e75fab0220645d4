package network

import (
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/cloudwatch"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/ec2"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/iampolicy"
)

// FlowLogGroup is the CloudWatch Logs group a cluster's VPC flow logs go to.
func FlowLogGroup(cluster string) string { return "/gpucluster/" + cluster + "/vpc-flow-logs" }

// flowLogs records the VPC's traffic to a CloudWatch Logs group it owns (deleted with the stack,
// records expiring after the retention period), delivered by a role that may write to that group
// and nothing else (VPC user guide, "IAM role for publishing flow logs to CloudWatch Logs", without
// logs:CreateLogGroup: the group exists already).
func (n *Network) flowLogs(ctx *pulumi.Context, name string, args Args, vpcID pulumi.StringInput, child pulumi.ResourceOption) error {
	f := args.Settings.FlowLogs
	if !f.Enabled {
		return nil
	}
	tags := pulumi.ToStringMap(args.Tags)
	group, err := cloudwatch.NewLogGroup(ctx, name+"-flow-logs", &cloudwatch.LogGroupArgs{
		Name: pulumi.String(FlowLogGroup(args.ClusterName)), RetentionInDays: pulumi.Int(f.RetentionDays), Tags: tags,
	}, child)
	if err != nil {
		return err
	}
	role, err := iam.NewRole(ctx, name+"-flow-logs", &iam.RoleArgs{
		Name:             pulumi.String(args.ClusterName + "-vpc-flow-logs"),
		AssumeRolePolicy: pulumi.String(iampolicy.ServiceTrust("vpc-flow-logs.amazonaws.com").String()),
		Description:      pulumi.String("Delivers the VPC flow logs of " + args.ClusterName),
		Tags:             tags,
	}, child)
	if err != nil {
		return err
	}
	policy := group.Arn.ApplyT(func(arn string) string {
		return iampolicy.New(iampolicy.Statement{Sid: "WriteFlowLogs", Effect: "Allow",
			Action:   []string{"logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogGroups", "logs:DescribeLogStreams"},
			Resource: []string{arn, arn + ":*"}}).String()
	}).(pulumi.StringOutput)
	rolePolicy, err := iam.NewRolePolicy(ctx, name+"-flow-logs", &iam.RolePolicyArgs{Role: role.Name, Policy: policy}, child)
	if err != nil {
		return err
	}
	_, err = ec2.NewFlowLog(ctx, name, &ec2.FlowLogArgs{
		VpcId: vpcID, TrafficType: pulumi.String(f.TrafficType),
		LogDestinationType: pulumi.String("cloud-watch-logs"), LogDestination: group.Arn, IamRoleArn: role.Arn,
		MaxAggregationInterval: pulumi.Int(600), Tags: tags,
	}, child, pulumi.DependsOn([]pulumi.Resource{rolePolicy})) // delivery needs the grant first
	return err
}
