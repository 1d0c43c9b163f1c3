// What the recurrent layers' ONNX forms share: ONNX's own `RNN` and `GRU` operators, one
// direction, run over the sequence the engine holds as (batch, time, features).
//
// The operators read (time, batch, features) and give Y (time, directions, batch, hidden). The
// `layout` attribute that would read the engine's order directly came in operator set 14, and the
// exporter writes from 13: a Transpose on each side works in every set it writes.
//
// The gate blocks are reordered once, here, into initializers of their own (`layers.1.W_zrh`)
// rather than by Split and Concat nodes: the file then holds the weights as the operator reads
// them, the runtime does no work for it on each run, and the graph reads as the one operator.
// The checkpoint's tensors (`weight_ih_l0`, …) are not written beside them: each scalar is in the
// file once, under a name that says its order is ONNX's, not PyTorch's.
import NeuronCore

extension GraphBuilder {
    /// ONNX's recurrent operator `op` (`RNN` or `GRU`, forward only) over the current sequence,
    /// with the parameters of layer `index` (at `path` inside it), PyTorch's `nn.RNN`/`nn.GRU`
    /// tensors and the learned initial state `h0`. Leaves every position's state, (batch, time,
    /// hidden), as the current value; the caller sets the layout.
    ///
    ///     // x: (batch, time, inputs)  W: (1, gates·hidden, inputs)  R: (1, gates·hidden, hidden)
    ///     // B: (1, 2·gates·hidden), Wb then Rb  initial_h: (1, batch, hidden), h0 at every sample
    ///     // →  Y: (time, 1, batch, hidden)  →  (batch, time, hidden)
    ///
    /// - Parameters:
    ///   - gateOrder: ONNX's gate block `i` is PyTorch's block `gateOrder[i]`; `[0]` for one gate.
    ///   - gates: the suffix of the initializers' names that says their order (`_zrh`), or `""`.
    ///   - attributes: the operator's own, besides `hidden_size`.
    mutating func addRecurrent(
        _ op: String, index: Int, path: String, hidden: Int, gateOrder: [Int], gates: String, attributes: [ONNXAttribute] = []
    ) {
        let prefix = prefix(index, path)
        let w = parameter(index, path + "weight_ih_l0").tensor, r = parameter(index, path + "weight_hh_l0").tensor
        let wb = parameter(index, path + "bias_ih_l0").tensor, rb = parameter(index, path + "bias_hh_l0").tensor
        let h0 = initializer(parameter(index, path + "h0"))
        let width = gateOrder.count * hidden
        let weight = constant("\(prefix).W\(gates)", [1, width, w.shape[1]], Self.reordered(w.scalars, gateOrder))
        let recurrence = constant("\(prefix).R\(gates)", [1, width, hidden], Self.reordered(r.scalars, gateOrder))
        let bias = constant(
            "\(prefix).B\(gates)", [1, 2 * width], Self.reordered(wb.scalars, gateOrder) + Self.reordered(rb.scalars, gateOrder))

        // initial_h = h0 expanded to (1, batch, hidden), the batch read from the input's shape.
        let batchAxis = int64s("\(prefix).batch_axis", [0]), directions = int64s("\(prefix).directions", [1])
        let hiddenSize = int64s("\(prefix).hidden", [hidden]), directionAxis = int64s("\(prefix).direction_axis", [1])
        let shape = add("Shape", [current], name: "\(prefix).input_shape")
        let batch = add("Gather", [shape, batchAxis], name: "\(prefix).batch", [ONNXAttribute(name: "axis", value: .int(0))])
        let stateShape = add(
            "Concat", [directions, batch, hiddenSize], name: "\(prefix).initial_h_shape", [ONNXAttribute(name: "axis", value: .int(0))])
        let initial = add("Expand", [h0, stateShape], name: "\(prefix).initial_h")

        // (batch, time, inputs) → (time, batch, inputs); sequence_lens left out: every row has every position.
        let swap = ONNXAttribute(name: "perm", value: .ints([1, 0, 2]))
        let x = add("Transpose", [current], name: "\(prefix).time_major", [swap])
        let y = add(
            op, [x, weight, recurrence, bias, "", initial], name: "\(prefix).\(op.lowercased())",
            [ONNXAttribute(name: "hidden_size", value: .int(hidden))] + attributes)
        // Y: (time, 1, batch, hidden) → (time, batch, hidden) → (batch, time, hidden)
        let states = add("Squeeze", [y, directionAxis], name: "\(prefix).states")
        current = add("Transpose", [states], name: "\(prefix).batch_major", [swap])
    }

    /// `scalars`, `order.count` equal blocks stacked, with block `i` taken from block `order[i]`.
    static func reordered(_ scalars: [Scalar], _ order: [Int]) -> [Scalar] {
        let size = scalars.count / order.count
        return order.flatMap { scalars[$0 * size..<($0 + 1) * size] }
    }
}
