// Causal multi-head self-attention in ONNX, the layer's formula in standard operators:
//
//     [q | k | v] = x·W_attnᵀ + b_attn         Transpose, MatMul, Add; Split on the last axis
//     q, k, v → (batch, heads, time, size)      Reshape to (batch, time, heads, size), Transpose
//     att = softmax(q·kᵀ·scale + mask)          MatMul, Mul, Add of the mask cut to (time, time), Softmax
//     y = (att·v joined back)·W_projᵀ + b_proj  MatMul, Transpose, Reshape to (batch, time, features); MatMul, Add
//
// Every operator in its opset-13 form, which every later set up to 25 still accepts: Split takes its
// sizes as an input (opset 18's `num_outputs` is an alternative, not a replacement), Softmax
// normalizes one axis. The mask is a (block, block) constant, 0 on and below the diagonal and −∞
// above, cut to the tokens' length: every row keeps its diagonal, so its maximum is finite and a
// masked entry's exp is exactly 0, the weight the engine gives a later position.
import NeuronCore

extension CausalSelfAttention: ONNXLayer {
    func addNodes(to graph: inout GraphBuilder<Scalar>, index: Int, path: String) throws(ONNXExportError) {
        guard case .sequence(_, let inputFeatures) = graph.layout, inputFeatures == features else {
            throw refused(at: index, "self-attention takes a sequence of \(features) features")
        }
        let prefix = graph.prefix(index, path), (f, size) = (features, headSize)
        func ints(_ name: String, _ values: [Int]) -> String { graph.int64s("\(prefix).\(name)", values) }
        func transpose(_ value: String, _ perm: [Int], _ name: String) -> String {
            graph.add("Transpose", [value], name: "\(prefix).\(name)", [ONNXAttribute(name: "perm", value: .ints(perm))])
        }

        // x: (batch, time, features)  W_attn: (3·features, features)  b_attn: (3·features)  →  qkv: (batch, time, 3·features)
        let wAttn = graph.initializer(graph.parameter(index, path + "c_attn.weight"))
        let bAttn = graph.initializer(graph.parameter(index, path + "c_attn.bias"))
        let qkv = graph.linear(weight: wAttn, bias: bAttn, prefix: "\(prefix).c_attn")
        let (q, k, v) = ("\(prefix).q", "\(prefix).k", "\(prefix).v")
        graph.graph.nodes.append(
            ONNXNode(
                opType: "Split", inputs: [qkv, ints("split_sizes", [f, f, f])], outputs: [q, k, v], name: "\(prefix).split",
                attributes: [ONNXAttribute(name: "axis", value: .int(-1))]))

        // q, k, v: (batch, time, features) → (batch, time, heads, size); 0 keeps the batch and the time as they are
        let headShape = ints("head_shape", [0, 0, heads, size])
        func perHead(_ value: String, _ name: String) -> String { graph.add("Reshape", [value, headShape], name: "\(prefix).\(name)") }
        let qh = transpose(perHead(q, "q_heads"), [0, 2, 1, 3], "q_t")  // (batch, heads, time, size)
        let kt = transpose(perHead(k, "k_heads"), [0, 2, 3, 1], "k_t")  // (batch, heads, size, time): kᵀ
        let vh = transpose(perHead(v, "v_heads"), [0, 2, 1, 3], "v_t")  // (batch, heads, time, size)

        // scores = q·kᵀ/√size + mask[..<time, ..<time]: (batch, heads, time, time)
        let products = graph.add("MatMul", [qh, kt], name: "\(prefix).products")
        let scale = graph.constant("\(prefix).scale", [], [1 / Scalar(size).squareRoot()])
        let scores = graph.add("Mul", [products, scale], name: "\(prefix).scores")
        // mask[t, j]: 0 for j ≤ t, −∞ after
        let block = time
        let maskScalars: [Scalar] = (0..<block * block).map { $0 % block > $0 / block ? -.infinity : 0 }
        let mask = graph.constant("\(prefix).mask", [block, block], maskScalars)
        let length = graph.time()
        let ends = graph.add("Concat", [length, length], name: "\(prefix).mask_ends", [ONNXAttribute(name: "axis", value: .int(0))])
        let cut = graph.add("Slice", [mask, ints("mask_starts", [0, 0]), ends, ints("mask_axes", [0, 1])], name: "\(prefix).mask_cut")
        let masked = graph.add("Add", [scores, cut], name: "\(prefix).masked")
        let attention = graph.add("Softmax", [masked], name: "\(prefix).attention", [ONNXAttribute(name: "axis", value: .int(-1))])

        // att·v: (batch, heads, time, size) → (batch, time, heads, size) → (batch, time, features), then c_proj
        let attended = graph.add("MatMul", [attention, vh], name: "\(prefix).attended")
        let joined = transpose(attended, [0, 2, 1, 3], "attended_t")
        graph.current = graph.add("Reshape", [joined, ints("joined_shape", [0, 0, f])], name: "\(prefix).joined")
        let wProj = graph.initializer(graph.parameter(index, path + "c_proj.weight"))
        let bProj = graph.initializer(graph.parameter(index, path + "c_proj.bias"))
        graph.current = graph.linear(weight: wProj, bias: bProj, prefix: "\(prefix).c_proj")
    }
}
