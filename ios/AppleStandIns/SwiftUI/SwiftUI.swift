// COMPILE-TIME STAND-IN for Apple's SwiftUI (Linux only; see ../README.md):
// as much as the docs' SwiftUI app needs to compile (an `App` with its
// `@UIApplicationDelegateAdaptor` and one window of text). Nothing is drawn;
// the bodies take no result builder (Apple's do: a one-view body reads the same).
import Foundation
import UIKit

public protocol View {
    associatedtype Body: View
    var body: Body { get }
}

public protocol Scene {
    associatedtype Body: Scene
    var body: Body { get }
}

public protocol App {
    associatedtype Body: Scene
    var body: Body { get }
    init()
}

extension Never: View, Scene {
    public typealias Body = Never
    public var body: Never { fatalError("a primitive view has no body") }
}

@resultBuilder public enum ViewBuilder {
    public static func buildBlock<Content: View>(_ content: Content) -> Content { content }
}

public struct WindowGroup<Content: View>: Scene {
    public typealias Body = Never
    public var body: Never { fatalError("a primitive scene has no body") }
    /// Stand-in only: the window's view.
    public let standInContent: Content
    public init(@ViewBuilder content: () -> Content) { standInContent = content() }
}

public struct Text: View {
    public typealias Body = Never
    public var body: Never { fatalError("a primitive view has no body") }
    /// Stand-in only: the text shown.
    public let standInString: String
    public init(_ content: String) { standInString = content }
}

/// Apple's: `DelegateType: NSObject & UIApplicationDelegate`, made by
/// SwiftUI at launch. Here a `UIResponder` (whose stand-in init is
/// `required`), made when the wrapper is.
@propertyWrapper public struct UIApplicationDelegateAdaptor<DelegateType: UIResponder & UIApplicationDelegate> {
    public let wrappedValue: DelegateType
    public init(_ delegateType: DelegateType.Type = DelegateType.self) { wrappedValue = delegateType.init() }
}
