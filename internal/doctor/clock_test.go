package doctor

import "time"

// testDay is the instant the tests of this package judge a stack on (topology.DeriveStack), so
// that none depends on the day it runs.
var testDay = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
