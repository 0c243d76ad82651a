// swift-tools-version:5.9
// (Tools 5.9: the Swift 5 language mode, as uniffi's generated code expects.)
// For Apple consumers. Run bindings/package-xcframework on a Mac first: it
// produces QuestionProtocolFFI.xcframework and copies the generated
// QuestionProtocol.swift into Sources/QuestionProtocol (neither is committed).
import PackageDescription

let package = Package(
    name: "QuestionProtocol",
    platforms: [.iOS(.v15), .macOS(.v12)],
    products: [
        .library(name: "QuestionProtocol", targets: ["QuestionProtocol"]),
    ],
    targets: [
        .binaryTarget(name: "QuestionProtocolFFI", path: "QuestionProtocolFFI.xcframework"),
        .target(
            name: "QuestionProtocol",
            dependencies: ["QuestionProtocolFFI"],
            path: "Sources/QuestionProtocol"
        ),
    ]
)
