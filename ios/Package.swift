// swift-tools-version:5.9
// (Tools 5.9: the Swift 5 language mode, as uniffi's generated code expects.)
//
// On Apple platforms: run bindings/package-xcframework on a Mac first. It
// builds QuestionProtocolFFI.xcframework and copies the generated
// QuestionProtocol.swift into Sources/QuestionProtocol (neither is committed).
//
// On Linux (how the project tests the package: ios/run-tests): the Rust
// library is built locally, its C header and module map go in
// Linux/QuestionProtocolFFI, and the Apple glue is compiled against the
// compile-time stand-ins in AppleStandIns/ (see the README there).
import PackageDescription

#if os(Linux)
let ffi: Target = .systemLibrary(name: "QuestionProtocolFFI", path: "Linux/QuestionProtocolFFI")
let standIns: [Target] = ["UserNotifications", "UIKit", "BackgroundTasks"].map {
    .target(name: $0, path: "AppleStandIns/\($0)")
}
let glueDependencies: [Target.Dependency] = ["QuestionProtocolFFI", "UserNotifications", "UIKit", "BackgroundTasks"]
#else
let ffi: Target = .binaryTarget(name: "QuestionProtocolFFI", path: "QuestionProtocolFFI.xcframework")
let standIns: [Target] = []
let glueDependencies: [Target.Dependency] = ["QuestionProtocolFFI"]
#endif

let package = Package(
    name: "QuestionProtocol",
    platforms: [.iOS(.v15), .macOS(.v12)],
    products: [
        .library(name: "QuestionProtocol", targets: ["QuestionProtocol"]),
    ],
    targets: [ffi] + standIns + [
        .target(
            name: "QuestionProtocol",
            dependencies: glueDependencies,
            path: "Sources/QuestionProtocol"
        ),
        .testTarget(
            name: "QuestionProtocolTests",
            dependencies: ["QuestionProtocol"],
            path: "Tests/QuestionProtocolTests"
        ),
    ]
)
