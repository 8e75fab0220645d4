package catalog

// Price is an on-demand hourly price with where it comes from.
type Price struct {
	USDPerHour float64
	Known      bool
}

// PriceSource names the prices below: Karpenter's generated on-demand price table, which
// pricing_test.go compares against the file itself in the Karpenter module the harness fetched.
const (
	PriceSource = "karpenter-provider-aws v1.15.2, pkg/providers/pricing/zz_generated.pricing_aws.go"
	PriceRegion = "us-east-1"
	PriceDate   = "2026-07-20"
)

// onDemandUSEast1 are on-demand Linux prices in us-east-1 (USD per hour). p5e.48xlarge has no
// on-demand price there (it is sold through Capacity Blocks), and p6e-gb200.36xlarge none
// anywhere (UltraServers are sold only as Capacity Blocks), so both are absent.
var onDemandUSEast1 = map[string]float64{
	"p4d.24xlarge":     21.957642,
	"p4de.24xlarge":    27.447050,
	"p5.48xlarge":      55.040000,
	"p5en.48xlarge":    63.296000,
	"p6-b200.48xlarge": 113.932800,
	"p6-b300.48xlarge": 142.416000,
	"p5.4xlarge":       6.880000,
	"g7e.2xlarge":      3.363120,
	"g7e.4xlarge":      3.998160,
	"g7e.8xlarge":      5.268240,
	"g7e.12xlarge":     8.286080,
	"g7e.24xlarge":     16.572160,
	"g7e.48xlarge":     33.144320,
	"g6e.xlarge":       1.861000,
	"g6e.2xlarge":      2.242080,
	"g6e.4xlarge":      3.004240,
	"g6e.8xlarge":      4.528560,
	"g6e.12xlarge":     10.492640,
	"g6e.16xlarge":     7.577190,
	"g6e.24xlarge":     15.065590,
	"g6e.48xlarge":     30.131180,
	"g5.48xlarge":      16.288000,
	"g6.48xlarge":      13.350400,
	"m7i.large":        0.100800,
}

// CloudWatch Logs list prices in us-east-1 (Amazon CloudWatch pricing, "Logs": standard
// ingestion, and vended logs delivered to CloudWatch Logs in their first 10 TB, both $0.50 per GB;
// storage, compressed): what VPC flow logs and EKS control-plane logs cost. No Go module the build
// holds publishes them, so they are quoted here with their source.
const (
	LogsIngestUSDPerGB       = 0.50
	LogsStorageUSDPerGBMonth = 0.03
	LogsPriceSource          = "Amazon CloudWatch pricing, Logs: standard ingestion and vended logs delivered to CloudWatch Logs (first 10 TB), us-east-1 list prices"
)

// OnDemand returns the us-east-1 on-demand price of an instance type.
func OnDemand(instanceType string) Price {
	p, ok := onDemandUSEast1[instanceType]
	return Price{USDPerHour: p, Known: ok}
}
