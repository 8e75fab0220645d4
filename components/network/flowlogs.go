package network

import (
	"strings"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/cloudwatch"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/ec2"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/iampolicy"
)

// FlowLogGroup is the CloudWatch Logs group a cluster's VPC flow logs go to.
func FlowLogGroup(cluster string) string { return "/gpucluster/" + cluster + "/vpc-flow-logs" }

// FlowLogTrust lets VPC Flow Logs assume the delivery role only for flow logs of the log
// group's account and region (VPC user guide, "IAM role for publishing flow logs to CloudWatch
// Logs": aws:SourceAccount, and aws:SourceArn with the flow log id a wildcard until it exists).
func FlowLogTrust(logGroupARN string) iampolicy.Document {
	p := strings.Split(logGroupARN, ":") // arn:<partition>:logs:<region>:<account>:log-group:<name>
	if len(p) < 5 {
		return iampolicy.ServiceTrustFrom("vpc-flow-logs.amazonaws.com", "", "")
	}
	return iampolicy.ServiceTrustFrom("vpc-flow-logs.amazonaws.com", p[4], "arn:"+p[1]+":ec2:"+p[3]+":"+p[4]+":vpc-flow-log/*")
}

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
		AssumeRolePolicy: group.Arn.ApplyT(func(arn string) string { return FlowLogTrust(arn).String() }).(pulumi.StringOutput),
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
