import Foundation
import Testing

@Suite("The shipped residual MLP on digits")
struct ResidualCommandTests {
    @Test("neuron gradcheck passes on Data/digits-residual.yaml, its blocks' tensors checked by name")
    func gradcheck() throws {
        let checked = try runNeuron(["gradcheck", dataDirectory + "/digits-residual.yaml", "--json"])
        #expect(checked.status == 0, "\(checked.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(checked.stdout.utf8)) as? [String: Any])
        #expect(report["passed"] as? Bool == true, "\(checked.stdout.prefix(2000))")
        let names = ((report["tensors"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String }
        #expect(names.contains("layers.1.body.0.weight") && names.contains("layers.2.body.1.bias"), "\(names)")
    }
}
