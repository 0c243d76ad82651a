// The Swift test program: vectors through the bindings, then end to end.
import Foundation
import QuestionProtocol

let runner = Runner()
runner.check("protocol version", protocolVersion() == "1.1")
runProtocol(runner)
runPayload(runner)
runPresent(runner)
runI18n(runner)
if ProcessInfo.processInfo.environment["QP_E2E_URL"] != nil {
    await runEndToEnd(runner)
}
runner.finish()
