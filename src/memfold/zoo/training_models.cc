// Training reference models: forward graphs that end in a float32 scalar loss, for the gradient
// pass (passes/gradient.h) to turn into training steps and for Echo to recompute in. The four
// workloads of the Echo paper (Zheng et al., ISCA 2020): Sockeye NMT, Transformer, ResNet and
// DeepSpeech2.
//
// Conventions shared by all four:
//   * The graph's first (only) output is the scalar loss. Inputs are the data (an f32
//     spectrogram or image, or i32 token ids) and i32 labels.
//   * Every node carries its layer type in Node::layer: embedding, rnn, attention, output,
//     conv, norm, ffn or loss (the memory profiler groups bytes by it).
//   * Activations are ops of their own (fully_connected / conv2d with activation "none"):
//     a fused activation has no gradient.
//   * Trainable parameters are constants of role kWeight. Batch-norm running statistics,
//     positional encodings, masks and initial recurrent states are constants of role kState,
//     which the gradient pass does not train.
//   * size=tiny replaces the default of every key the spec leaves alone by a small value (listed
//     per model); layer counts and depth stay those of the full model, so a tiny model has the
//     full model's architecture and runs forward and backward in milliseconds.
//
// Building is O(nodes + parameters); the unrolled recurrent models add a fixed number of nodes
// per time step and layer.
#include <cmath>
#include <string>
#include <vector>

#include "memfold/ops/builder.h"
#include "memfold/zoo/zoo.h"

namespace memfold {
namespace {

using Ints = std::vector<int64_t>;

// Key values with size=tiny applied: a key the spec leaves alone takes its tiny value.
class Config {
 public:
  explicit Config(const ZooArgs& args) : args_(args), tiny_(args.Choice("size") == "tiny") {}
  int64_t Int(std::string_view key, int64_t tiny_value) const {
    return tiny_ && !args_.Given(key) ? tiny_value : args_.Int(key);
  }

 private:
  const ZooArgs& args_;
  bool tiny_;
};

std::string Str(int64_t n) { return std::to_string(n); }

// A model under construction: the builder, the layer tag of the nodes added next, and a
// counter that gives every dropout its own seed.
class Net {
 public:
  explicit Net(std::string name) : b(std::move(name)) {}

  GraphBuilder b;
  std::string layer;

  ValueId Op(const std::string& op, std::vector<ValueId> inputs, Attrs attrs = {},
             const std::string& name = "") {
    return b.Op(op, std::move(inputs), std::move(attrs), name, layer);
  }
  // y = x w^T + bias (bias may be kNoValue), no fused activation. Flattens x to rows of w's
  // depth unless keep_dims, which keeps x's leading dimensions.
  ValueId Fc(ValueId x, ValueId w, ValueId bias, const std::string& name = "",
             bool keep_dims = false) {
    Attrs attrs;
    attrs.Set("keep_num_dims", int64_t{keep_dims});
    std::vector<ValueId> inputs{x, w};
    if (bias != kNoValue) inputs.push_back(bias);
    return Op("fully_connected", std::move(inputs), attrs, name);
  }
  ValueId Reshape(ValueId x, Ints shape, const std::string& name = "") {
    Attrs attrs;
    attrs.Set("shape", std::move(shape));
    return Op("reshape", {x}, attrs, name);
  }
  ValueId Slice(ValueId x, Ints begin, Ints size) {
    Attrs attrs;
    attrs.Set("begin", std::move(begin));
    attrs.Set("size", std::move(size));
    return Op("slice", {x}, attrs);
  }
  ValueId Concat(std::vector<ValueId> xs, int64_t axis, const std::string& name = "") {
    Attrs attrs;
    attrs.Set("axis", axis);
    return Op("concat", std::move(xs), attrs, name);
  }
  ValueId Transpose(ValueId x, Ints perm) {
    Attrs attrs;
    attrs.Set("perm", std::move(perm));
    return Op("transpose", {x}, attrs);
  }
  // Inverted dropout with its own seed; the identity (no node) at rate 0.
  ValueId Dropout(ValueId x, double rate) {
    if (rate <= 0) return x;
    Attrs attrs;
    attrs.Set("rate", rate);
    attrs.Set("seed", ++seeds_);
    return Op("dropout", {x}, attrs);
  }
  // A fixed scalar factor, shape [1] (broadcasts against anything).
  ValueId Scalar(const std::string& name, float value) {
    return b.Constant(name, {1}, {value}, Role::kState);
  }
  // Layer normalisation over the last axis with trainable gamma (ones) and beta (zeros).
  ValueId LayerNorm(ValueId x, const std::string& name) {
    layer = "norm";
    const int64_t d = b.shape(x).back();
    const ValueId gamma = b.Constant(name + "/gamma", {d}, {1.0f}, Role::kWeight);
    const ValueId beta = b.Constant(name + "/beta", {d}, {0.0f}, Role::kWeight);
    return Op("layer_norm", {x, gamma, beta}, {}, name);
  }
  // Training-mode batch normalisation over the last (channel) axis: trainable gamma and beta,
  // running mean (zeros) and variance (ones) as state.
  ValueId BatchNorm(ValueId x, const std::string& name) {
    layer = "norm";
    const int64_t c = b.shape(x).back();
    const ValueId gamma = b.Constant(name + "/gamma", {c}, {1.0f}, Role::kWeight);
    const ValueId beta = b.Constant(name + "/beta", {c}, {0.0f}, Role::kWeight);
    const ValueId mean = b.Constant(name + "/running_mean", {c}, {0.0f}, Role::kState);
    const ValueId var = b.Constant(name + "/running_var", {c}, {1.0f}, Role::kState);
    return Op("batch_norm_train", {x, gamma, beta, mean, var}, {}, name);
  }
  // Mean softmax cross entropy of logits [N, C] against labels [N]; the loss is the output.
  Result<Graph> FinishWithLoss(ValueId logits, ValueId labels) {
    layer = "loss";
    return b.Finish({Op("softmax_cross_entropy", {logits, labels}, {}, "loss")});
  }

 private:
  int64_t seeds_ = 0;
};

// Embedding lookup of i32 ids [batch, steps] (table [vocab, dim], uniform in +-0.1 as Sockeye's
// --weight-init-scale) followed by dropout: [batch, steps, dim].
ValueId Embed(Net& net, ValueId ids, ValueId table, double rate, const std::string& name) {
  net.layer = "embedding";
  return net.Dropout(net.Op("gather", {table, ids}, {}, name), rate);
}

// The unroll's split of [batch, steps, dim] into one [batch, dim] value per step.
std::vector<ValueId> SplitSteps(Net& net, ValueId x) {
  net.layer = "rnn";
  const Shape s = net.b.shape(x);
  std::vector<ValueId> steps;
  for (int64_t t = 0; t < s[1]; ++t) {
    steps.push_back(net.Reshape(net.Slice(x, {0, t, 0}, {s[0], 1, s[2]}), {s[0], s[2]}));
  }
  return steps;
}

// ---------------------------------------------------------------------------------------------
// LSTM, unrolled in time like MXNet's LSTMCell.unroll.

struct Lstm {
  ValueId i2h, bias, h2h;  // [4H, in], [4H], [4H, H]; gate order in, forget, transform, out
  int64_t hidden;
};

struct LstmState {
  ValueId h = kNoValue;  // kNoValue: the zero initial state
  ValueId c = kNoValue;
};

Lstm MakeLstm(Net& net, int64_t in, int64_t hidden, const std::string& name) {
  return {net.b.LayerWeight(name + "/i2h_weight", {4 * hidden, in}, in),
          net.b.Weight(name + "/i2h_bias", {4 * hidden}, 0.01f),
          net.b.LayerWeight(name + "/h2h_weight", {4 * hidden, hidden}, hidden), hidden};
}

// One step: gates = FC(x) + FC(h) (one [4H] projection each, the bias on the first), sliced
// into i, f, g, o; c' = sigmoid(f) * c + sigmoid(i) * tanh(g); h' = sigmoid(o) * tanh(c').
// From the zero state the h2h projection and the forget term vanish, so they are not built.
LstmState LstmStep(Net& net, const Lstm& w, ValueId x, LstmState prev, const std::string& name) {
  net.layer = "rnn";
  const int64_t batch = net.b.shape(x)[0], h = w.hidden;
  ValueId gates = net.Fc(x, w.i2h, w.bias, name + "/i2h");
  if (prev.h != kNoValue) {
    gates =
        net.Op("add", {gates, net.Fc(prev.h, w.h2h, kNoValue, name + "/h2h")}, {}, name + "/gates");
  }
  auto gate = [&](int64_t k, const char* activation, const char* gate_name) {
    return net.Op(activation, {net.Slice(gates, {0, k * h}, {batch, h})}, {},
                  name + "/" + gate_name);
  };
  const ValueId in = gate(0, "sigmoid", "in");
  const ValueId transform = gate(2, "tanh", "transform");
  ValueId c = net.Op("mul", {in, transform});
  if (prev.c != kNoValue) {
    const ValueId forget = gate(1, "sigmoid", "forget");
    c = net.Op("add", {net.Op("mul", {forget, prev.c}), c}, {}, name + "/c");
  }
  const ValueId out = gate(3, "sigmoid", "out");
  const ValueId hidden = net.Op("mul", {out, net.Op("tanh", {c})}, {}, name + "/h");
  return {hidden, c};
}

// One layer over a sequence of [batch, in] steps, forwards or backwards in time. Returns the
// hidden state of every step in input order; *last receives the final state.
std::vector<ValueId> RunLstm(Net& net, const Lstm& w, const std::vector<ValueId>& inputs,
                             bool reverse, const std::string& name, LstmState* last = nullptr) {
  std::vector<ValueId> outputs(inputs.size(), kNoValue);
  LstmState state;
  const auto steps = static_cast<int64_t>(inputs.size());
  for (int64_t k = 0; k < steps; ++k) {
    const int64_t t = reverse ? steps - 1 - k : k;
    state = LstmStep(net, w, inputs[static_cast<size_t>(t)], state, name + "/t" + Str(t));
    outputs[static_cast<size_t>(t)] = state.h;
  }
  if (last != nullptr) *last = state;
  return outputs;
}

// A bidirectional layer over a sequence of [batch, in] steps: a forward and a backward LSTM of
// `hidden` units (parameters and nodes name_fwd/..., name_bwd/...) whose outputs at each step
// are concatenated along the features if `concat`, else added (node name/t<step>).
std::vector<ValueId> RunBidirectional(Net& net, const std::vector<ValueId>& inputs, int64_t in,
                                      int64_t hidden, bool concat, const std::string& name) {
  const Lstm forward = MakeLstm(net, in, hidden, name + "_fwd");
  const Lstm backward = MakeLstm(net, in, hidden, name + "_bwd");
  const std::vector<ValueId> fwd = RunLstm(net, forward, inputs, false, name + "_fwd");
  const std::vector<ValueId> bwd = RunLstm(net, backward, inputs, true, name + "_bwd");
  net.layer = "rnn";
  std::vector<ValueId> outputs;
  for (size_t t = 0; t < inputs.size(); ++t) {
    const std::string step = name + "/t" + std::to_string(t);
    outputs.push_back(concat ? net.Concat({fwd[t], bwd[t]}, 1, step)
                             : net.Op("add", {fwd[t], bwd[t]}, {}, step));
  }
  return outputs;
}

// Stacks per-step [batch, dim] values into [batch, steps, dim].
ValueId Stack(Net& net, const std::vector<ValueId>& steps, const std::string& name) {
  const Shape s = net.b.shape(steps.front());
  return net.Reshape(net.Concat(steps, 1), {s[0], static_cast<int64_t>(steps.size()), s[1]}, name);
}

}  // namespace

// Sockeye's RNN encoder-decoder with MLP attention (Bahdanau), as the Echo paper trained it on
// IWSLT15 En-Vi (sockeye.train --encoder rnn --decoder rnn --num-layers 2:2 --rnn-cell-type lstm
// --rnn-num-hidden 512 --num-embed 512:512 --rnn-attention-type mlp
// --rnn-attention-num-hidden 512 --batch-size 128), unrolled in time as MXNet does.
//
//   * Encoder: source embedding; a bidirectional first layer (hidden / 2 units per direction,
//     outputs concatenated per step), then layers - 1 unidirectional layers.
//   * Decoder state init ("last"): each decoder layer's h and c = tanh(FC(last encoder state)).
//   * Decoder step t (input feeding): x = concat(target embedding t, previous attention
//     hidden); layers LSTM layers give the query q; score = v^T tanh(W_q q + U_k K) where U_k K
//     is computed once for all source positions and broadcast-added at every step (the Echo
//     paper's Figure 8); softmax over source positions; context = alpha K (batch_matmul);
//     attention hidden a_t = tanh(FC(concat(q, context))); logits_t = FC(a_t) to the target
//     vocabulary. The first step's previous attention hidden is zero (a kState constant).
//   * Loss: the steps' logits concatenated to [batch * seq, tvocab] (row b * seq + t), mean
//     softmax cross entropy against the labels (the target shifted by one).
//   * Dropout (rate `dropout`, each op its own seed): on both embeddings, between stacked LSTM
//     layers at every step, and on the attention hidden state at every step.
//
// seq defaults to 100 = Sockeye's default --max-seq-len 100:100, which the paper's run keeps:
// bucketing binds the longest bucket, so memory and the graph (10,000+ forward nodes, the
// paper's "more than 10K operators") are those of 100-token sentences.
//
// Inputs: source [batch, seq] i32, target [batch, seq] i32, labels [batch * seq] i32 (sentence
// major, as the logits' rows). Tiny: batch 2, seq 3, hidden 8, vocab 11, tvocab 11.
Result<Graph> BuildNmt(const ZooArgs& args) {
  const Config cfg(args);
  const int64_t batch = cfg.Int("batch", 2), seq = cfg.Int("seq", 3), hidden = cfg.Int("hidden", 8);
  const int64_t vocab = cfg.Int("vocab", 11), tvocab = cfg.Int("tvocab", 11);
  const int64_t layers = args.Int("layers");
  const double rate = args.Float("dropout");
  if (hidden % 2 != 0) {
    return Status::Error("hidden=" + Str(hidden) +
                         " must be even: each direction of the "
                         "bidirectional first encoder layer has hidden / 2 units");
  }
  Net net("nmt");
  GraphBuilder& b = net.b;
  const ValueId source = b.Input("source", {batch, seq}, DType::kI32);
  const ValueId target = b.Input("target", {batch, seq}, DType::kI32);
  const ValueId labels = b.Input("labels", {batch * seq}, DType::kI32);

  // Encoder.
  const ValueId source_table = b.Weight("source_embed/weight", {vocab, hidden}, 0.1f);
  std::vector<ValueId> steps =
      SplitSteps(net, Embed(net, source, source_table, rate, "source_embed"));
  steps = RunBidirectional(net, steps, hidden, hidden / 2, true, "encoder/l0");
  for (int64_t l = 1; l < layers; ++l) {
    const std::string name = "encoder/l" + Str(l);
    const Lstm cell = MakeLstm(net, hidden, hidden, name);
    for (ValueId& x : steps) x = net.Dropout(x, rate);
    steps = RunLstm(net, cell, steps, false, name);
  }
  const ValueId keys = Stack(net, steps, "encoder/states");  // [batch, seq, hidden]

  // Decoder initial states from the last encoder state.
  std::vector<Lstm> decoder;
  std::vector<LstmState> state;
  for (int64_t l = 0; l < layers; ++l) {
    const std::string name = "decoder/l" + Str(l);
    decoder.push_back(MakeLstm(net, l == 0 ? 2 * hidden : hidden, hidden, name));
    LstmState init;
    for (const char* part : {"h", "c"}) {
      const std::string init_name = name + "/init_" + part;
      const ValueId w = b.LayerWeight(init_name + "_weight", {hidden, hidden}, hidden);
      const ValueId bias = b.Weight(init_name + "_bias", {hidden}, 0.01f);
      net.layer = "rnn";
      const ValueId v = net.Op("tanh", {net.Fc(steps.back(), w, bias)}, {}, init_name);
      (part[0] == 'h' ? init.h : init.c) = v;
    }
    state.push_back(init);
  }

  // Attention parameters and the source projection U_k K, shared by every decoder step.
  net.layer = "attention";
  const ValueId source_proj = b.LayerWeight("attention/source_weight", {hidden, hidden}, hidden);
  const ValueId query_proj = b.LayerWeight("attention/query_weight", {hidden, hidden}, hidden);
  const ValueId score_proj = b.LayerWeight("attention/score_weight", {1, hidden}, hidden);
  const ValueId hidden_proj =
      b.LayerWeight("attention/hidden_weight", {hidden, 2 * hidden}, 2 * hidden);
  const ValueId hidden_bias = b.Weight("attention/hidden_bias", {hidden}, 0.01f);
  const ValueId source_hidden =
      net.Fc(keys, source_proj, kNoValue, "attention/source_hidden", true);
  const ValueId out_proj = b.LayerWeight("output/weight", {tvocab, hidden}, hidden);
  const ValueId out_bias = b.Weight("output/bias", {tvocab}, 0.01f);

  const ValueId target_table = b.Weight("target_embed/weight", {tvocab, hidden}, 0.1f);
  const std::vector<ValueId> words =
      SplitSteps(net, Embed(net, target, target_table, rate, "target_embed"));
  ValueId previous = b.Constant("decoder/initial_hidden", {batch, hidden}, {0.0f}, Role::kState);
  std::vector<ValueId> logits;
  for (int64_t t = 0; t < seq; ++t) {
    const std::string step = "decoder/t" + Str(t);
    net.layer = "rnn";
    ValueId x = net.Concat({words[static_cast<size_t>(t)], previous}, 1, step + "/input");
    for (int64_t l = 0; l < layers; ++l) {
      const auto i = static_cast<size_t>(l);
      if (l > 0) x = net.Dropout(x, rate);
      state[i] = LstmStep(net, decoder[i], x, state[i], "decoder/l" + Str(l) + "/t" + Str(t));
      x = state[i].h;
    }
    net.layer = "attention";
    const ValueId query = net.Reshape(net.Fc(x, query_proj, kNoValue), {batch, 1, hidden});
    const ValueId mixed =
        net.Op("tanh", {net.Op("add", {query, source_hidden}, {}, step + "/att_add")});
    const ValueId scores = net.Reshape(net.Fc(mixed, score_proj, kNoValue, "", true), {batch, seq});
    const ValueId alpha = net.Op("softmax", {scores}, {}, step + "/att_probs");
    const ValueId context = net.Reshape(
        net.Op("batch_matmul", {net.Reshape(alpha, {batch, 1, seq}), keys}), {batch, hidden});
    const ValueId joined = net.Concat({x, context}, 1);
    previous = net.Dropout(
        net.Op("tanh", {net.Fc(joined, hidden_proj, hidden_bias)}, {}, step + "/att_hidden"), rate);
    net.layer = "output";
    logits.push_back(net.Fc(previous, out_proj, out_bias, step + "/logits"));
  }
  net.layer = "output";
  const ValueId all = net.Reshape(net.Concat(logits, 1), {batch * seq, tvocab}, "logits");
  return net.FinishWithLoss(all, labels);
}

namespace {

// ---------------------------------------------------------------------------------------------
// Transformer.

struct MultiHead {
  ValueId wq, bq, wk, bk, wv, bv, wo, bo;  // [d, d] and [d] each
};

MultiHead MakeMultiHead(Net& net, int64_t d, const std::string& name) {
  MultiHead m{};
  ValueId* parts[4][2] = {{&m.wq, &m.bq}, {&m.wk, &m.bk}, {&m.wv, &m.bv}, {&m.wo, &m.bo}};
  const char* names[4] = {"query", "key", "value", "output"};
  for (int k = 0; k < 4; ++k) {
    *parts[k][0] = net.b.LayerWeight(name + "/" + names[k] + "_weight", {d, d}, d);
    *parts[k][1] = net.b.Weight(name + "/" + names[k] + "_bias", {d}, 0.01f);
  }
  return m;
}

// Scaled dot-product attention over `heads` heads: [batch, lq, d] queries against
// [batch, lk, d] memory; `mask` (kNoValue or [lq, lk], added to the scores) hides positions.
ValueId Attend(Net& net, const MultiHead& w, ValueId query, ValueId memory, ValueId mask,
               int64_t heads, const std::string& name) {
  net.layer = "attention";
  const Shape qs = net.b.shape(query), ms = net.b.shape(memory);
  const int64_t batch = qs[0], lq = qs[1], lk = ms[1], d = qs[2], dk = d / heads;
  // [batch, len, d] -> [batch, heads, len, dk]
  auto split = [&](ValueId x, int64_t len) {
    return net.Transpose(net.Reshape(x, {batch, len, heads, dk}), {0, 2, 1, 3});
  };
  const ValueId scale = net.Scalar(name + "/scale", 1.0f / std::sqrt(static_cast<float>(dk)));
  const ValueId q =
      net.Op("mul", {split(net.Fc(query, w.wq, w.bq, name + "/query", true), lq), scale});
  const ValueId k = split(net.Fc(memory, w.wk, w.bk, name + "/key", true), lk);
  const ValueId v = split(net.Fc(memory, w.wv, w.bv, name + "/value", true), lk);
  Attrs transpose_b;
  transpose_b.Set("transpose_b", int64_t{1});
  ValueId scores = net.Op("batch_matmul", {q, k}, transpose_b, name + "/scores");
  if (mask != kNoValue) scores = net.Op("add", {scores, mask});
  const ValueId probs = net.Op("softmax", {scores}, {}, name + "/probs");
  const ValueId context = net.Transpose(net.Op("batch_matmul", {probs, v}), {0, 2, 1, 3});
  return net.Fc(net.Reshape(context, {batch, lq, d}), w.wo, w.bo, name + "/output", true);
}

// Post-norm residual sublayer: LayerNorm(x + dropout(y)), the add tagged with the sublayer.
ValueId Residual(Net& net, ValueId x, ValueId y, double rate, const std::string& layer,
                 const std::string& name) {
  net.layer = layer;
  const ValueId sum = net.Op("add", {x, net.Dropout(y, rate)}, {}, name + "/residual");
  return net.LayerNorm(sum, name + "/norm");
}

ValueId FeedForward(Net& net, ValueId x, int64_t ffn, const std::string& name) {
  net.layer = "ffn";
  const int64_t d = net.b.shape(x).back();
  const ValueId w1 = net.b.LayerWeight(name + "/ffn1_weight", {ffn, d}, d);
  const ValueId b1 = net.b.Weight(name + "/ffn1_bias", {ffn}, 0.01f);
  const ValueId w2 = net.b.LayerWeight(name + "/ffn2_weight", {d, ffn}, ffn);
  const ValueId b2 = net.b.Weight(name + "/ffn2_bias", {d}, 0.01f);
  const ValueId h = net.Op("relu", {net.Fc(x, w1, b1, name + "/ffn1", true)});
  return net.Fc(h, w2, b2, name + "/ffn2", true);
}

// Sinusoidal positional encoding [len, d] (Vaswani et al. 3.5).
std::vector<float> PositionalEncoding(int64_t len, int64_t d) {
  std::vector<float> pe(static_cast<size_t>(len * d));
  for (int64_t pos = 0; pos < len; ++pos) {
    for (int64_t i = 0; i < d; ++i) {
      const double angle =
          static_cast<double>(pos) /
          std::pow(10000.0, static_cast<double>(i - i % 2) / static_cast<double>(d));
      pe[static_cast<size_t>(pos * d + i)] =
          static_cast<float>(i % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  }
  return pe;
}

}  // namespace

// The Transformer base model (Vaswani et al. 2017): `layers` encoder and `layers` decoder
// layers, d_model = hidden, `heads` heads, FFN width `ffn`, post-norm residual sublayers
// (LayerNorm(x + dropout(sublayer(x)))), dropout on the embedded inputs and every sublayer
// output. One shared vocabulary: the source and target embeddings and the pre-softmax
// projection share one [vocab, hidden] table (the paper's weight tying); the output layer has
// its own bias. Embeddings are scaled by sqrt(hidden) and added to fixed sinusoidal positional
// encodings; the decoder's self-attention adds a causal mask (-1e9 above the diagonal). No
// padding masks: every sentence is `seq` tokens.
//
// Parameters at the defaults (vocab 32,000 BPE tokens, hidden 512, ffn 2048, 6 + 6 layers):
// 60,554,496 — embedding 16,384,000; per encoder layer 3,152,384 (attention 1,050,624, FFN
// 2,099,712, two norms 2,048); per decoder layer 4,204,032 (two attentions, FFN, three norms);
// output bias 32,000. (The paper's 65M used a 37,000-token vocabulary.)
//
// Inputs: source and target (decoder input, shifted right) [batch, seq] i32, labels
// [batch * seq] i32 (sentence major). Tiny: batch 2, seq 4, hidden 8, heads 2, ffn 16, vocab 11.
Result<Graph> BuildTransformer(const ZooArgs& args) {
  const Config cfg(args);
  const int64_t batch = cfg.Int("batch", 2), seq = cfg.Int("seq", 4), d = cfg.Int("hidden", 8);
  const int64_t heads = cfg.Int("heads", 2), ffn = cfg.Int("ffn", 16), vocab = cfg.Int("vocab", 11);
  const int64_t layers = args.Int("layers");
  const double rate = args.Float("dropout");
  if (d % heads != 0) {
    return Status::Error("hidden=" + Str(d) + " is not divisible by heads=" + Str(heads) +
                         "; choose hidden as a multiple of heads");
  }
  Net net("transformer");
  GraphBuilder& b = net.b;
  const ValueId source = b.Input("source", {batch, seq}, DType::kI32);
  const ValueId target = b.Input("target", {batch, seq}, DType::kI32);
  const ValueId labels = b.Input("labels", {batch * seq}, DType::kI32);

  const ValueId table =
      b.Weight("embedding/weight", {vocab, d}, 1.0f / std::sqrt(static_cast<float>(d)));
  const ValueId position = b.Constant("embedding/positional_encoding", {seq, d},
                                      PositionalEncoding(seq, d), Role::kState);
  const ValueId embed_scale = net.Scalar("embedding/scale", std::sqrt(static_cast<float>(d)));
  auto embed = [&](ValueId ids, const std::string& name) {
    net.layer = "embedding";
    const ValueId scaled = net.Op("mul", {net.Op("gather", {table, ids}, {}, name), embed_scale});
    return net.Dropout(net.Op("add", {scaled, position}, {}, name + "/position"), rate);
  };

  ValueId memory = embed(source, "encoder/embed");
  for (int64_t l = 0; l < layers; ++l) {
    const std::string name = "encoder/l" + Str(l);
    const MultiHead self = MakeMultiHead(net, d, name + "/self_attention");
    memory = Residual(net, memory,
                      Attend(net, self, memory, memory, kNoValue, heads, name + "/self_attention"),
                      rate, "attention", name + "/self_attention");
    memory = Residual(net, memory, FeedForward(net, memory, ffn, name), rate, "ffn", name + "/ffn");
  }

  std::vector<float> causal(static_cast<size_t>(seq * seq), 0.0f);
  for (int64_t q = 0; q < seq; ++q) {
    for (int64_t k = q + 1; k < seq; ++k) causal[static_cast<size_t>(q * seq + k)] = -1e9f;
  }
  const ValueId mask =
      b.Constant("decoder/causal_mask", {seq, seq}, std::move(causal), Role::kState);
  ValueId x = embed(target, "decoder/embed");
  for (int64_t l = 0; l < layers; ++l) {
    const std::string name = "decoder/l" + Str(l);
    const MultiHead self = MakeMultiHead(net, d, name + "/self_attention");
    const MultiHead cross = MakeMultiHead(net, d, name + "/cross_attention");
    x = Residual(net, x, Attend(net, self, x, x, mask, heads, name + "/self_attention"), rate,
                 "attention", name + "/self_attention");
    x = Residual(net, x, Attend(net, cross, x, memory, kNoValue, heads, name + "/cross_attention"),
                 rate, "attention", name + "/cross_attention");
    x = Residual(net, x, FeedForward(net, x, ffn, name), rate, "ffn", name + "/ffn");
  }

  net.layer = "output";
  const ValueId out_bias = b.Weight("output/bias", {vocab}, 0.01f);
  const ValueId logits = net.Fc(x, table, out_bias, "logits");  // [batch * seq, vocab]
  return net.FinishWithLoss(logits, labels);
}

namespace {

// ---------------------------------------------------------------------------------------------
// Convolutional layers.

// conv2d without bias (filter [out, kh, kw, in]), batch norm, optional relu.
ValueId ConvBn(Net& net, ValueId x, int64_t out_c, int64_t kh, int64_t kw, Ints stride, bool relu,
               const std::string& name) {
  net.layer = "conv";
  const int64_t in_c = net.b.shape(x)[3];
  const ValueId w = net.b.LayerWeight(name + "/weight", {out_c, kh, kw, in_c}, kh * kw * in_c);
  Attrs attrs;
  attrs.Set("stride", std::move(stride));
  attrs.Set("padding", std::string("same"));
  ValueId y = net.BatchNorm(net.Op("conv2d", {x, w}, attrs, name), name + "/bn");
  net.layer = "conv";
  if (relu) y = net.Op("relu", {y}, {}, name + "/relu");
  return y;
}

ValueId ConvBn(Net& net, ValueId x, int64_t out_c, int64_t k, int64_t stride, bool relu,
               const std::string& name) {
  return ConvBn(net, x, out_c, k, k, {stride, stride}, relu, name);
}

struct ResNetSpec {
  int64_t depth;
  bool bottleneck;
  int64_t blocks[4];
};

constexpr ResNetSpec kResNets[] = {
    {18, false, {2, 2, 2, 2}},  {34, false, {3, 4, 6, 3}},  {50, true, {3, 4, 6, 3}},
    {101, true, {3, 4, 23, 3}}, {152, true, {3, 8, 36, 3}}, {200, true, {3, 24, 36, 3}},
};

}  // namespace

// ResNet (He et al. 2016) for ImageNet training: a 7x7/2 convolution and 3x3/2 max pool, four
// stages of basic (depth 18, 34) or bottleneck (50 and deeper; expansion 4, stride on the 3x3
// convolution as in torchvision) blocks with projection shortcuts where the shape changes,
// global average pooling, a fully-connected classifier and softmax cross entropy. Every
// convolution is conv2d without bias + batch_norm_train (+ relu). Stage widths are width,
// 2 width, 4 width, 8 width (64 in the paper); SAME padding.
//
// The trainable parameters equal torchvision's counts (batch-norm gamma and beta included,
// running statistics are state): ResNet-18 11,689,512; 34 21,797,672; 50 25,557,032;
// 101 44,549,160; 152 60,192,808 (1,000 classes).
//
// Inputs: image [batch, res, res, 3] f32, labels [batch] i32.
// Tiny: batch 2, res 32, width 4, classes 10 (depth unchanged).
Result<Graph> BuildResNet(const ZooArgs& args) {
  const Config cfg(args);
  const int64_t depth = args.Int("depth");
  const ResNetSpec* spec = nullptr;
  std::string depths;
  for (const ResNetSpec& s : kResNets) {
    if (s.depth == depth) spec = &s;
    depths += (depths.empty() ? "" : ", ") + Str(s.depth);
  }
  if (spec == nullptr) return Status::Error("depth=" + Str(depth) + " is not one of " + depths);
  const int64_t batch = cfg.Int("batch", 2), res = cfg.Int("res", 32), width = cfg.Int("width", 4);
  const int64_t classes = cfg.Int("classes", 10);

  Net net("resnet" + Str(depth));
  GraphBuilder& b = net.b;
  const ValueId image = b.Input("image", {batch, res, res, 3});
  const ValueId labels = b.Input("labels", {batch}, DType::kI32);
  ValueId x = ConvBn(net, image, width, 7, 2, true, "conv1");
  x = net.Op("max_pool2d", {x}, PoolAttrs(3, 3, 2, "same"), "maxpool");
  for (int64_t stage = 0; stage < 4; ++stage) {
    const int64_t planes = width << stage;
    const int64_t out_c = spec->bottleneck ? 4 * planes : planes;
    for (int64_t block = 0; block < spec->blocks[stage]; ++block) {
      const std::string name = "layer" + Str(stage + 1) + "." + Str(block);
      const int64_t stride = block == 0 && stage > 0 ? 2 : 1;
      ValueId y;
      if (spec->bottleneck) {
        y = ConvBn(net, x, planes, 1, 1, true, name + "/conv1");
        y = ConvBn(net, y, planes, 3, stride, true, name + "/conv2");
        y = ConvBn(net, y, out_c, 1, 1, false, name + "/conv3");
      } else {
        y = ConvBn(net, x, planes, 3, stride, true, name + "/conv1");
        y = ConvBn(net, y, planes, 3, 1, false, name + "/conv2");
      }
      const bool project = stride != 1 || b.shape(x)[3] != out_c;
      const ValueId shortcut =
          project ? ConvBn(net, x, out_c, 1, stride, false, name + "/downsample") : x;
      net.layer = "conv";
      x = net.Op("relu", {net.Op("add", {y, shortcut}, {}, name + "/add")}, {}, name + "/relu");
    }
  }
  net.layer = "output";
  const Shape s = b.shape(x);
  x = net.Reshape(net.Op("avg_pool2d", {x}, PoolAttrs(s[1], s[2], 1, "valid"), "avgpool"),
                  {s[0], s[3]});
  const ValueId w = b.LayerWeight("fc/weight", {classes, s[3]}, s[3]);
  const ValueId bias = b.Weight("fc/bias", {classes}, 0.01f);
  return net.FinishWithLoss(net.Fc(x, w, bias, "fc"), labels);
}

// DeepSpeech2 (Amodei et al. 2016) as in MXNet's speech-recognition example: a spectrogram
// [batch, frames, freq, 1] through two convolutions with batch norm and relu — 11 x 41
// (time x frequency), stride 2 x 2, then 11 x 21, stride 1 x 2, `channels` filters each, SAME
// padding — then `layers` bidirectional LSTM layers of `hidden` units unrolled over the
// ceil(frames / 2) output frames (the two directions' outputs summed per frame, as in the DS2
// paper), then a per-frame fully-connected classifier to 29 characters (blank, space,
// apostrophe, a-z).
//
// The loss is FRAME-WISE softmax cross entropy, one label per output frame: CTC loss is not
// implemented, so labels [batch * ceil(frames / 2)] are an alignment of the transcript to the
// frames (utterance major: label b * frames' + t). Memory and compute of the network are
// those of CTC training (CTC adds a loss over the same [frames, 29] activations).
//
// seq (frames) defaults to 300: 3 seconds of audio at the usual 10 ms hop, a short LibriSpeech
// utterance (which average about 12 s; raise seq for longer ones — nodes grow linearly).
//
// Inputs: spectrogram [batch, seq, freq, 1] f32, labels [batch * ceil(seq / 2)] i32.
// Tiny: batch 2, seq 8, hidden 8, freq 33, channels 2 (layers unchanged).
Result<Graph> BuildDeepSpeech2(const ZooArgs& args) {
  constexpr int64_t kCharacters = 29;
  const Config cfg(args);
  const int64_t batch = cfg.Int("batch", 2), frames = cfg.Int("seq", 8),
                hidden = cfg.Int("hidden", 8);
  const int64_t freq = cfg.Int("freq", 33), channels = cfg.Int("channels", 2);
  const int64_t layers = args.Int("layers");

  Net net("deepspeech2");
  GraphBuilder& b = net.b;
  ValueId x = b.Input("spectrogram", {batch, frames, freq, 1});
  x = ConvBn(net, x, channels, 11, 41, {2, 2}, true, "conv1");
  x = ConvBn(net, x, channels, 11, 21, {1, 2}, true, "conv2");
  const Shape s = b.shape(x);  // [batch, steps, freq', channels]
  const int64_t steps = s[1];
  const ValueId labels = b.Input("labels", {batch * steps}, DType::kI32);
  net.layer = "rnn";
  std::vector<ValueId> inputs =
      SplitSteps(net, net.Reshape(x, {batch, steps, s[2] * s[3]}, "features"));
  for (int64_t l = 0; l < layers; ++l) {
    const std::string name = "rnn/l" + Str(l);
    inputs = RunBidirectional(net, inputs, b.shape(inputs.front())[1], hidden, false, name);
  }
  net.layer = "output";
  const ValueId frames_out = net.Reshape(net.Concat(inputs, 1), {batch * steps, hidden});
  const ValueId w = b.LayerWeight("classifier/weight", {kCharacters, hidden}, hidden);
  const ValueId bias = b.Weight("classifier/bias", {kCharacters}, 0.01f);
  return net.FinishWithLoss(net.Fc(frames_out, w, bias, "classifier"), labels);
}

}  // namespace memfold
