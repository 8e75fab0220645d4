package topology

// AWS name limits of the resources gpucluster names, by Pulumi type token and the input that
// carries the name. One table: the program's names are checked against it for the longest
// cluster and pool names the validator accepts (infra/program TestEveryAWSNameFitsItsLimit).
// Sources are the services' API models (github.com/aws/api-models-aws) unless noted.

// NameLimit is the longest name an AWS API accepts for one resource input.
type NameLimit struct {
	Input string // the resource input that holds the name
	Max   int
	// AutoNamed: without the input, Pulumi names the resource "<logical name>-<7 hex>" and
	// refuses a logical name whose result exceeds Max.
	AutoNamed bool
	Source    string
}

// AWSNameLimits are the limits, by Pulumi type token.
var AWSNameLimits = map[string]NameLimit{
	"aws:scheduler/schedule:Schedule":           {Input: "name", Max: 64, Source: "scheduler-2021-06-30 Name: 1-64, [0-9a-zA-Z-_.]+"},
	"aws:scheduler/scheduleGroup:ScheduleGroup": {Input: "name", Max: 64, Source: "scheduler-2021-06-30 ScheduleGroupName: 1-64"},
	"aws:iam/role:Role":                         {Input: "name", Max: 64, AutoNamed: true, Source: "iam-2010-05-08 roleNameType: 1-64"},
	"aws:iam/rolePolicy:RolePolicy":             {Input: "name", Max: 128, AutoNamed: true, Source: "iam-2010-05-08 policyNameType: 1-128"},
	"aws:cloudwatch/logGroup:LogGroup":          {Input: "name", Max: 512, AutoNamed: true, Source: "cloudwatch-logs-2014-03-28 LogGroupName: 1-512"},
	"aws:cloudwatch/eventRule:EventRule":        {Input: "name", Max: 64, AutoNamed: true, Source: "eventbridge-2015-10-07 RuleName: 1-64"},
	"aws:ec2/launchTemplate:LaunchTemplate":     {Input: "name", Max: 128, AutoNamed: true, Source: "EC2 API reference, CreateLaunchTemplate LaunchTemplateName: 3-128"},
	"aws:ec2/placementGroup:PlacementGroup":     {Input: "name", Max: 255, Source: "EC2 API reference, CreatePlacementGroup GroupName: up to 255 ASCII characters"},
	"aws:ec2/securityGroup:SecurityGroup":       {Input: "name", Max: 255, AutoNamed: true, Source: "EC2 API reference, CreateSecurityGroup GroupName: up to 255 characters"},
	"aws:eks/nodeGroup:NodeGroup":               {Input: "nodeGroupName", Max: 63, Source: "EKS UG launch templates: node group names up to 63 characters (the API model states none; pulumi-aws autonames up to 255)"},
	"aws:sqs/queue:Queue":                       {Input: "name", Max: 80, AutoNamed: true, Source: "sqs-2012-11-05 QueueName: up to 80 characters"},
	"aws:kms/alias:Alias":                       {Input: "name", Max: 256, Source: "kms-2014-11-01 AliasNameType: 1-256"},
	"eks:index:Cluster":                         {Input: "name", Max: 100, Source: "eks-2017-11-01 CreateCluster name: 1-100"},
}

// ExpiryScheduleGroup is the EventBridge Scheduler group of a stack's expiry schedules: names
// are unique within a group, so each schedule is named by its pool alone and fits Scheduler's
// 64 characters whatever the cluster's name, and the scheduler role's trust policy can name the
// group as its source (Scheduler's confused-deputy guidance scopes aws:SourceArn to a group).
func ExpiryScheduleGroup(cluster string) string { return "gpucluster-" + cluster }

// ExpiryScheduleName is a pool's expiry schedule inside ExpiryScheduleGroup.
func ExpiryScheduleName(pool string) string { return pool + "-expiry" }
