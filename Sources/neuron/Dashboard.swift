import ArgumentParser
import Foundation
import NeuronDashboard
import NeuronTraining

/// `neuron dashboard RUN_DIR`: the browser view of a finished or interrupted run, from its files.
struct Dashboard: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show a finished or interrupted run in the browser, from its run directory.",
        discussion: """
            Reads checkpoint.safetensors, metrics.csv and summary.json and serves the same page as \
            `neuron train --dashboard`, until Ctrl-C. Check gradients and clicking a unit work on the saved weights.
            """)

    @Argument(help: "The run directory (or its checkpoint file).")
    var run: String

    @Option(help: "The dashboard's port (0: any free port).")
    var port: Int = 0

    @Option(help: "The dashboard's address (default loopback only; another address exposes the run to the network).")
    var host: String = "127.0.0.1"

    func validate() throws {
        if !(0...65535).contains(port) { throw ValidationError("--port must be 0 to 65535, got \(port)") }
    }

    @MainActor
    func run() async throws {
        let run = self.run
        StopSignals.onExit { "dashboard of \(run) stopped by \($0); the run's files are unchanged" }
        let model = try SavedRunViewModel(directory: run)
        let server: DashboardServer
        do {
            server = try await DashboardServer.start(
                binding: DashboardBinding(model: model, engine: { model.engine }, source: "files"), host: host, port: port)
        } catch {
            throw RunError.invalid("\(error)")
        }
        announce(server)
        // Until Ctrl-C, SIGTERM or SIGHUP, which end the process at once (nothing here to save).
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}
