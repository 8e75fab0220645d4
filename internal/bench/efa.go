package bench

import "github.com/gpucluster/gpucluster/internal/efareading"

// The EFA counter blocks of a job's log, as internal/efareading reads them (the doctor reads
// them too, and bench imports the doctor).
type (
	EFAReadings = efareading.Readings
	EFATraffic  = efareading.Traffic
	EFAEvents   = efareading.Events
	EFANode     = efareading.Node
)

// ParseEFACounters reads the counter blocks of a log (efareading.Parse).
var ParseEFACounters = efareading.Parse
