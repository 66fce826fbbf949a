package model

// What the external tests (package model_test: the tests that run the graphs built from the model, in
// nodeup/nodegraph and cloudup/cloudgraph, which import model) use of the package's unexported names and test
// helpers.

const (
	TestSubnetwork = testSubnetwork
)

var (
	CompleteSpec        = completeSpec
	EnvAssignment       = envAssignment
	ExecLineForTest     = execLine
	ExpandCommandLine   = expandCommandLine
	FindInstanceGroup   = findInstanceGroup
	GceResourceName     = gceResourceName
	Group               = group
	HostileValues       = hostileValues
	KubeletFields       = kubeletFields
	KubeletLabelAllowed = kubeletLabelAllowed
	Must                = must
	NewInstanceGroup    = newInstanceGroup
	NewProtokubeConfig  = newProtokubeConfig
	NotWritten          = notWritten
	ParseCommandLine    = parseCommandLine
	ParseEnvFile        = parseEnvFile
	PathProblem         = pathProblem
	ProblemsOf          = problemsOf
	Sha256Hex           = sha256Hex
	UnitDirective       = unitDirective
	UnitPath            = unitPath
	UserSpec            = userSpec
	WithSumLine         = withSumLine
)

// Ptr is ptr.
func Ptr[T any](v T) *T { return ptr(v) }

// Secret is f.secret().
func (f NodeFile) Secret() bool { return f.secret() }
