package awssdk

import (
	"fmt"
	"log/slog"

	"github.com/aws/smithy-go/logging"
)

// Logger passes what the SDK logs (its warnings about a response body it could not drain, a clock skew, a
// deprecated setting) to slog's default logger at debug level, instead of the SDK's default of printing to
// stderr, where they reached the user's terminal between kubeup's own lines.
var Logger logging.Logger = logging.LoggerFunc(func(class logging.Classification, format string, args ...any) {
	slog.Debug("the AWS SDK says", "class", string(class), "message", fmt.Sprintf(format, args...))
})
