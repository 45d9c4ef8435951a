// Tests of the pictures and the report (io/svg, io/report, `memfold report`): geometry of the
// arena picture, hatched overlaps, escaping of hostile names (from a built graph and from a
// .tflite file whose tensor names were replaced by markup and invalid bytes), bounded size for
// thousands of buffers, the training picture, the per-kind live curves it draws, and the
// report rendered by headless Chromium. Every document is checked for well-formed XML.
#include "memfold/io/report.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "memfold/exec/training.h"
#include "memfold/io/arena_svg.h"
#include "memfold/io/text.h"
#include "memfold/io/training_svg.h"
#include "memfold/io/xml.h"
#include "memfold/ops/builder.h"
#include "memfold/passes/training_plan.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/plan/plan_graph.h"
#include "tests/program_runner.h"
#include "xml_check.h"

namespace memfold {
namespace {

namespace fs = std::filesystem;
using testing::XmllintProblem;
using testing::XmlProblem;

fs::path TempPath(const std::string& name) {
  return fs::temp_directory_path() /
         ("memfold_report_test_" + std::to_string(::getpid()) + "_" + name);
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteFile(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// Both checkers agree the document is well-formed XML.
void ExpectWellFormed(const std::string& document, const std::string& what) {
  EXPECT_EQ(XmlProblem(document), "") << what;
  const fs::path file = TempPath("wellformed.xml");
  WriteFile(file, document);
  const std::optional<std::string> lint = XmllintProblem(file);
  if (lint) {
    EXPECT_EQ(*lint, "") << what;
  }
  fs::remove(file);
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size()))
    ++n;
  return n;
}

struct Box {
  double x, y, w, h;
};

// Rectangles with a tooltip, by the tooltip's first line.
std::map<std::string, Box> TitledRects(const std::string& svg) {
  std::map<std::string, Box> boxes;
  static const std::regex rect(
      "<rect x=\"([-0-9.]+)\" y=\"([-0-9.]+)\" width=\"([-0-9.]+)\" "
      "height=\"([-0-9.]+)\"[^>]*><title>([^\\n<]*)");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), rect); it != std::sregex_iterator();
       ++it) {
    boxes[(*it)[5]] = {std::stod((*it)[1]), std::stod((*it)[2]), std::stod((*it)[3]),
                       std::stod((*it)[4])};
  }
  return boxes;
}

// A signed figure carries its own sign: a split that saves FLOPs once printed "+-0.90 %".
TEST(Text, SignedFixedPrintsOneSign) {
  EXPECT_EQ(SignedFixed(0.9, 2), "+0.90");
  EXPECT_EQ(SignedFixed(-0.9, 2), "-0.90");
  EXPECT_EQ(Fixed(-0.904, 2), "-0.90");
  EXPECT_EQ(Fixed(3.14159, 1), "3.1");
}

TEST(Xml, EscapeReplacesMarkupAndBytesXmlForbids) {
  EXPECT_EQ(XmlEscape("a<b>&\"'c"), "a&lt;b&gt;&amp;&quot;&#39;c");
  EXPECT_EQ(XmlEscape("naïve → ü 日本"), "naïve → ü 日本");  // valid UTF-8 is kept
  EXPECT_EQ(XmlEscape("tab\tnl\n"), "tab\tnl\n");
  EXPECT_EQ(XmlEscape(std::string("x\x01y\0z", 5)), "x\uFFFDy\uFFFDz");  // control characters
  EXPECT_EQ(XmlEscape("\xff"), "\uFFFD");                                // not UTF-8 at all
  EXPECT_EQ(XmlEscape("\xC0\xAF"), "\uFFFD\uFFFD");                      // overlong '/'
  EXPECT_EQ(XmlEscape("\xED\xA0\x80"), "\uFFFD\uFFFD\uFFFD");            // a surrogate
  EXPECT_EQ(XmlEscape("\xEF\xBF\xBE"), "\uFFFD");          // U+FFFE, not an XML character
  EXPECT_EQ(XmlEscape("end\xE2\x82"), "end\uFFFD\uFFFD");  // truncated sequence
}

TEST(Xml, CheckerRejectsBrokenDocuments) {
  EXPECT_EQ(XmlProblem("<?xml version=\"1.0\"?>\n<a x=\"1\"><b/>t &amp; &#39;</a>\n"), "");
  EXPECT_NE(XmlProblem("<a><b></a></b>"), "");
  EXPECT_NE(XmlProblem("<a>x < y</a>"), "");
  EXPECT_NE(XmlProblem("<a>AT&T</a>"), "");
  EXPECT_NE(XmlProblem("<a x=1></a>"), "");
  EXPECT_NE(XmlProblem("<a x=\"<\"></a>"), "");
  EXPECT_NE(XmlProblem("<a></a><b></b>"), "");
  EXPECT_NE(XmlProblem("<a>\xff</a>"), "");
  EXPECT_NE(XmlProblem("<a>"), "");
}

// zoo:cnn's greedy plan: every buffer tall enough is one rectangle whose width is its lifetime
// and whose height and position are its bytes and offset, on one scale.
TEST(Svg, ArenaDrawsEveryBufferToScale) {
  Result<Graph> g = LoadModel("zoo:cnn");
  ASSERT_TRUE(g.ok());
  Result<GraphPlan> gp = PlanGraph(*g, "greedy");
  ASSERT_TRUE(gp.ok());
  const std::string svg = ArenaSvg(*g, *gp, "zoo:cnn, greedy plan");
  ExpectWellFormed(svg, "arena svg");
  const std::map<std::string, Box> boxes = TitledRects(svg);
  auto name_of = [&](const BufferRequest& q) {
    const ValueId v = gp->liveness.value_of[static_cast<size_t>(q.id)];
    return v == kNoValue ? std::string("scratch") : g->value(v).name;
  };
  // The largest buffer (conv1's output, 64 KiB) fixes the scales.
  const auto ref_it = std::find_if(gp->liveness.requests.begin(), gp->liveness.requests.end(),
                                   [&](const BufferRequest& q) { return name_of(q) == "conv1"; });
  ASSERT_NE(ref_it, gp->liveness.requests.end());
  const BufferRequest& ref = *ref_it;
  const int32_t conv1 = ref.id;
  ASSERT_EQ(boxes.count("conv1"), 1u);
  const Box& r = boxes.at("conv1");
  const double step = r.w / (ref.last - ref.first + 1),
               per_byte = r.h / static_cast<double>(ref.bytes);
  const double origin_x = r.x - ref.first * step;
  const double zero_y =
      r.y + r.h + static_cast<double>(gp->plan.offsets[static_cast<size_t>(conv1)]) * per_byte;
  int drawn = 0;
  for (const BufferRequest& q : gp->liveness.requests) {
    const std::string name = name_of(q);
    if (name == "scratch" || static_cast<double>(q.bytes) * per_byte < 3)
      continue;  // merged, not drawn alone
    ASSERT_EQ(boxes.count(name), 1u) << name;
    const Box& b = boxes.at(name);
    const double offset = static_cast<double>(gp->plan.offsets[static_cast<size_t>(q.id)]);
    EXPECT_NEAR(b.x, origin_x + q.first * step, 0.2) << name;
    EXPECT_NEAR(b.w, (q.last - q.first + 1) * step, 0.2) << name;
    EXPECT_NEAR(b.h, static_cast<double>(q.bytes) * per_byte, 0.2) << name;
    EXPECT_NEAR(b.y + b.h, zero_y - offset * per_byte, 0.2) << name;
    ++drawn;
  }
  EXPECT_GE(drawn, 9);
  EXPECT_NE(svg.find("arena " + HumanBytes(gp->plan.arena_bytes)), std::string::npos);
  EXPECT_NE(svg.find("lower bound " + HumanBytes(gp->lower_bound)), std::string::npos);
  EXPECT_EQ(svg.find("url(#overlap)\" stroke"), std::string::npos);  // greedy overlaps nothing
  // Every operator labels its column, with its full name as tooltip.
  for (NodeId id : g->schedule)
    EXPECT_NE(svg.find(" " + g->node(id).name + " ("), std::string::npos) << g->node(id).name;
}

// The diagonal plan's shared bytes (output over its dying input) are hatched, one region per
// overlapping pair tall enough to see (here: at least 1 % of the arena), each saying how many
// bytes it shares.
TEST(Svg, ArenaHatchesDiagonalOverlaps) {
  Result<Graph> g = LoadModel("zoo:cnn");
  ASSERT_TRUE(g.ok());
  Result<GraphPlan> gp = PlanGraph(*g, "diagonal");
  ASSERT_TRUE(gp.ok());
  const std::string svg = ArenaSvg(*g, *gp, "zoo:cnn, diagonal plan");
  ExpectWellFormed(svg, "diagonal arena svg");
  int pairs = 0, visible = 0;
  for (const BufferRequest& out : gp->liveness.requests) {
    const int64_t out_begin = gp->plan.offsets[static_cast<size_t>(out.id)];
    for (const OverlapAllowance& a : out.may_overlap) {
      const int64_t in_begin = gp->plan.offsets[static_cast<size_t>(a.input)];
      const int64_t shared =
          std::min(out_begin + out.bytes,
                   in_begin + gp->liveness.requests[static_cast<size_t>(a.input)].bytes) -
          std::max(out_begin, in_begin);
      if (shared <= 0) continue;
      ++pairs;
      if (shared * 100 < gp->plan.arena_bytes) continue;
      ++visible;
      EXPECT_NE(svg.find(GroupDigits(shared) +
                         " B shared (proven safe overlap O_s = " + GroupDigits(a.max_bytes)),
                std::string::npos);
    }
  }
  ASSERT_GT(visible,
            3);  // the diagonal plan of zoo:cnn overlaps (65,952 B against greedy's 98,304 B)
  const auto hatched = static_cast<int>(
      Count(svg, "fill=\"url(#overlap)\" stroke=\"#c51b8a\" stroke-width=\"1\"><title>"));
  EXPECT_GE(hatched, visible);
  EXPECT_LE(hatched, pairs);
}

// Names chosen to break markup: tags, quotes, ampersands, CDATA ends, control and invalid bytes.
const std::string kHostile = "</title><script>alert(\"x\")</script>&amp;'\x01]]>\xff";

TEST(Svg, HostileNamesAreEscaped) {
  GraphBuilder b(kHostile);
  const ValueId x = b.Input(kHostile + "in", {1, 64});
  const ValueId y = b.Op("relu", {x}, {}, kHostile + "relu");
  const ValueId z = b.Op("tanh", {y}, {}, "<tanh>");
  Result<Graph> g = b.Finish({z});
  ASSERT_TRUE(g.ok()) << g.status().message();
  Result<GraphPlan> gp = PlanGraph(*g, "smallest");
  ASSERT_TRUE(gp.ok());
  const std::string svg = ArenaSvg(*g, *gp, kHostile);
  ExpectWellFormed(svg, "svg with hostile names");
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_NE(svg.find("&lt;/title&gt;&lt;script&gt;alert(&quot;x&quot;)"), std::string::npos);
  Report report{.title = kHostile, .subtitle = kHostile};
  report.sections.push_back({.id = "a\"><script>",
                             .title = kHostile,
                             .paragraphs = {kHostile},
                             .tables = {{.caption = kHostile,
                                         .header = {kHostile, ">" + kHostile},
                                         .rows = {{kHostile, kHostile}}}},
                             .svg = svg});
  const std::string html = RenderHtml(report);
  ExpectWellFormed(html, "html with hostile names");
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

// A chain of 6,000 small operators: the picture merges what is under a few pixels and stays
// small.
TEST(Svg, ThousandsOfBuffersStayBounded) {
  GraphBuilder b("long");
  ValueId x = b.Input("x", {1, 16});
  for (int i = 0; i < 6000; ++i)
    x = b.Op(i % 2 ? "relu" : "tanh", {x}, {}, "op" + std::to_string(i));
  Result<Graph> g = b.Finish({x});
  ASSERT_TRUE(g.ok());
  Result<GraphPlan> gp = PlanGraph(*g, "greedy");
  ASSERT_TRUE(gp.ok());
  ASSERT_GT(gp->liveness.requests.size(), 6000u);
  const std::string svg = ArenaSvg(*g, *gp, "6,000 operators");
  ExpectWellFormed(svg, "long chain svg");
  EXPECT_LT(svg.size(), 300'000u);
  EXPECT_NE(svg.find("small buffers, merged"), std::string::npos);
  EXPECT_LT(Count(svg, "<rect"), 2000u);
}

// The kinds of live arena bytes add up to the live bytes at every step, and nothing the
// backward pass makes is live during the forward pass.
TEST(Profile, LiveCurvesByKindSumToLiveBytes) {
  Result<Graph> g = LoadModel("zoo:nmt,size=tiny");
  ASSERT_TRUE(g.ok());
  Result<PlannedTraining> p = PlanTraining(std::move(g).value(), "none");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const MemoryProfile& m = p->profile;
  ASSERT_EQ(m.live_feature_maps.size(), m.live_bytes.size());
  ASSERT_EQ(m.live_gradients.size(), m.live_bytes.size());
  ASSERT_EQ(m.live_workspace.size(), m.live_bytes.size());
  for (size_t t = 0; t < m.live_bytes.size(); ++t) {
    EXPECT_EQ(m.live_feature_maps[t] + m.live_gradients[t] + m.live_workspace[t], m.live_bytes[t])
        << t;
    if (t <= p->training.forward_nodes) {
      EXPECT_EQ(m.live_gradients[t], 0) << t;
    }
  }
  const auto peak = static_cast<size_t>(m.peak_time);
  EXPECT_LE(m.breakdown.feature_maps, m.live_feature_maps[peak]);
  EXPECT_LE(m.breakdown.gradients, m.live_gradients[peak]);
  EXPECT_GT(*std::max_element(m.live_gradients.begin(), m.live_gradients.end()), 0);
}

// One panel per strategy and one bar per strategy, each with its numbers, on one scale.
TEST(Svg, TrainingPictureShowsEveryStrategy) {
  Result<Graph> g = LoadModel("zoo:resnet,size=tiny");
  ASSERT_TRUE(g.ok());
  std::vector<PlannedTraining> planned;
  for (const char* strategy : {"none", "mirror", "echo"}) {
    Result<PlannedTraining> p = PlanTraining(*g, strategy);
    ASSERT_TRUE(p.ok()) << p.status().message();
    planned.push_back(std::move(p).value());
  }
  std::vector<StrategyMemory> strategies;
  for (const PlannedTraining& p : planned) {
    strategies.push_back({p.strategy(), &p.profile, p.training.forward_nodes, p.recomputed_nodes});
  }
  const std::string svg = TrainingSvg(strategies, "zoo:resnet,size=tiny");
  ExpectWellFormed(svg, "training svg");
  const double none = static_cast<double>(planned[0].profile.breakdown.total());
  std::map<std::string, Box> boxes = TitledRects(svg);
  double bar_per_byte = 0;
  for (const PlannedTraining& p : planned) {
    const MemoryBreakdown& b = p.profile.breakdown;
    EXPECT_NE(svg.find(p.strategy() + ": footprint " + HumanBytes(b.total()) + ", " +
                       std::to_string(p.recomputed_nodes) + " nodes recomputed"),
              std::string::npos);
    EXPECT_NE(svg.find(p.strategy() + ": live feature maps, at most"), std::string::npos);
    char reduction[16];
    std::snprintf(reduction, sizeof(reduction), "%.2fx", none / static_cast<double>(b.total()));
    EXPECT_NE(svg.find(std::string(">") + reduction + "<"), std::string::npos) << reduction;
    // The bars' feature-map segments share one bytes-to-pixels scale.
    const std::string key = p.strategy() + ": feature maps " + HumanBytes(b.feature_maps) + " (";
    auto it = std::find_if(boxes.begin(), boxes.end(),
                           [&](const auto& e) { return e.first.rfind(key, 0) == 0; });
    ASSERT_NE(it, boxes.end()) << key;
    const double per_byte = it->second.h / static_cast<double>(b.feature_maps);
    if (bar_per_byte == 0) bar_per_byte = per_byte;
    EXPECT_NEAR(per_byte, bar_per_byte, bar_per_byte * 0.02) << p.strategy();
  }
}

TEST(Report, RendersTablesSectionsAndInlineSvg) {
  Report report{.title = "memfold report: m", .subtitle = "Model: m"};
  report.sections.push_back(
      {.id = "planners",
       .title = "Planners",
       .paragraphs = {"p < q & r"},
       .tables = {
           {.caption = "c", .header = {"planner", ">arena"}, .rows = {{"greedy", "1,024"}}}}});
  report.sections.push_back({.id = "Arena Picture",
                             .title = "Arena",
                             .svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "
                                    "xmlns=\"http://www.w3.org/2000/svg\"/>\n"});
  const std::string html = RenderHtml(report);
  ExpectWellFormed(html, "report");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<th class=\"num\">arena</th>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">1,024</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>greedy</td>"), std::string::npos);
  EXPECT_NE(html.find("<p>p &lt; q &amp; r</p>"), std::string::npos);
  EXPECT_NE(html.find("<section id=\"arena-picture\">"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"#arena-picture\">Arena</a>"), std::string::npos);
  EXPECT_EQ(Count(html, "<?xml"), 0u);  // the picture's declaration is dropped when inlined
  EXPECT_EQ(Count(html, "<svg xmlns=\"http://www.w3.org/2000/svg\"/>"), 1u);
  EXPECT_EQ(html.find("http://", html.find("</style>")),
            html.find("http://www.w3.org/2000/svg"));  // no links out
}

// ---- Through the program --------------------------------------------------------------------

using testing::Memfold;
using testing::Outcome;
using testing::RunShell;

// hello_world_float.tflite with its first operator's output and its input renamed, in place,
// to markup, a control character and bytes that are not UTF-8 (same lengths: the flatbuffer
// stays valid).
fs::path HostileTflite() {
  std::string model =
      ReadFile(fs::path(MEMFOLD_SHARED_DIR) / "models/tflite-micro/hello_world_float.tflite");
  auto rename = [&](const std::string& from, std::string to) {
    const size_t at = model.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    to.resize(from.size(), '_');
    if (at != std::string::npos) model.replace(at, from.size(), to);
  };
  rename("sequential/dense/MatMul;sequential/dense/Relu;sequential/dense/BiasAdd",
         kHostile + "<b onclick='x'>");
  rename("serving_default_dense_input:0", "<svg onload=alert(2)>&\x7f\xfe");
  const fs::path path = TempPath("hostile.tflite");
  WriteFile(path, model);
  return path;
}

TEST(ReportCli, HostileTfliteNamesAreEscapedInPictureAndReport) {
  const fs::path model = HostileTflite(), svg = TempPath("hostile.svg"),
                 html = TempPath("hostile.html");
  Outcome r =
      Memfold("plan '" + model.string() + "' --planner diagonal --svg '" + svg.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  r = Memfold("report '" + model.string() + "' -o '" + html.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const fs::path& file : {svg, html}) {
    const std::string text = ReadFile(file);
    ExpectWellFormed(text, file.string());
    EXPECT_EQ(text.find("<script"), std::string::npos) << file;
    EXPECT_EQ(text.find("<b onclick"), std::string::npos) << file;
    EXPECT_EQ(text.find("<svg onload"), std::string::npos) << file;
    EXPECT_NE(text.find("&lt;/title&gt;&lt;script&gt;alert(&quot;x&quot;)&lt;/"
                        "script&gt;&amp;amp;&#39;\uFFFD]]&gt;\uFFFD"),
              std::string::npos)
        << file;
  }
  fs::remove(model);
  fs::remove(svg);
  fs::remove(html);
}

TEST(ReportCli, InferenceAndTrainingReports) {
  const fs::path html = TempPath("cnn.html");
  Outcome r = Memfold("report zoo:cnn -o '" + html.string() + "' --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");  // stderr is not a terminal: no progress
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["sections"], nlohmann::json::array({"summary", "planners", "arena", "overlap"}));
  std::string text = ReadFile(html);
  EXPECT_EQ(j["bytes"], text.size());
  ExpectWellFormed(text, "cnn report");
  for (const char* planner : {"naive", "greedy", "greedy_stable", "diagonal", "best"}) {
    EXPECT_NE(text.find(std::string("<td>") + planner + "</td>"), std::string::npos) << planner;
  }
  EXPECT_NE(text.find("<td class=\"num\">65,952</td>"),
            std::string::npos);                               // diagonal's arena for zoo:cnn
  EXPECT_EQ(Count(text, "<td>yes</td>"), 5u);                 // every plan verified
  EXPECT_NE(text.find("<td>conv1</td>"), std::string::npos);  // the O_s table
  r = Memfold("report zoo:resnet,size=tiny -o '" + html.string() + "' --json");
  ASSERT_EQ(r.code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["sections"], nlohmann::json::array({"summary", "strategies", "training"}));
  text = ReadFile(html);
  ExpectWellFormed(text, "training report");
  EXPECT_NE(text.find("reduction vs none"), std::string::npos);
  EXPECT_NE(text.find("echo: footprint"), std::string::npos);
  r = Memfold("report zoo:cnn -o '" + html.string() + "'");
  EXPECT_EQ(r.out,
            "wrote " + html.string() + " (" +
                HumanBytes(static_cast<int64_t>(ReadFile(html).size())) +
                "): Model, Planners, Arena of the best plan, Safe overlap O_s per operator\n");
  r = Memfold("report zoo:cnn --quiet -o '" + html.string() + "'");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out + r.err, "");  // a file was the product: nothing to say
  r = Memfold("report zoo:cnn -o /no/such/dir/report.html");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("/no/such/dir/report.html: cannot write the file"), std::string::npos)
      << r.err;
  fs::remove(html);
}

// The report as a browser sees it: headless Chromium parses it (no script element appears
// from the hostile names) and draws a full-size, non-empty screenshot.
TEST(ReportCli, RendersInHeadlessChromium) {
  if (std::system("command -v chromium >/dev/null 2>&1") != 0) {
    GTEST_SKIP()
        << "chromium is not installed (scripts/install-deps.sh installs it); report not rendered";
  }
  const fs::path model = HostileTflite(), html = TempPath("render.html"),
                 png = TempPath("render.png");
  const Outcome made = Memfold("report '" + model.string() + "' -o '" + html.string() + "'");
  ASSERT_EQ(made.code, 0) << made.err;
  // Each instance gets a profile of its own: two Chromiums sharing one (the two below, or
  // another test run on the machine) refuse to start.
  auto chromium = [](const fs::path& profile) {
    return "chromium --headless --disable-gpu --no-sandbox --hide-scrollbars --user-data-dir='" +
           profile.string() + "' ";
  };
  const fs::path shot_profile = TempPath("chromium-shot"), dom_profile = TempPath("chromium-dom");
  const std::string url = "'file://" + html.string() + "'";
  auto shot = std::async(std::launch::async, [&] {
    return RunShell(chromium(shot_profile) + "--screenshot='" + png.string() +
                    "' --window-size=1400,2000 " + url);
  });
  const Outcome dom = RunShell(chromium(dom_profile) + "--dump-dom " + url);
  const Outcome screenshot = shot.get();
  ASSERT_EQ(dom.code, 0) << dom.err;
  EXPECT_NE(dom.out.find("<section id=\"planners\">"), std::string::npos)
      << dom.out.size() << " bytes of DOM; stderr: " << dom.err;
  EXPECT_NE(dom.out.find("<section id=\"overlap\">"), std::string::npos);
  EXPECT_NE(dom.out.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_EQ(dom.out.find("<script"), std::string::npos);
  EXPECT_EQ(dom.out.find("parsererror"), std::string::npos);
  ASSERT_EQ(screenshot.code, 0) << screenshot.err;
  const std::string image = ReadFile(png);
  ASSERT_GT(image.size(), 24u);
  EXPECT_EQ(image.substr(0, 8), "\x89PNG\r\n\x1a\n");
  auto be32 = [&](size_t at) {
    return (static_cast<uint32_t>(static_cast<unsigned char>(image[at])) << 24) |
           (static_cast<uint32_t>(static_cast<unsigned char>(image[at + 1])) << 16) |
           (static_cast<uint32_t>(static_cast<unsigned char>(image[at + 2])) << 8) |
           static_cast<uint32_t>(static_cast<unsigned char>(image[at + 3]));
  };
  EXPECT_EQ(be32(16), 1400u);  // IHDR width
  EXPECT_EQ(be32(20), 2000u);  // IHDR height
  // A blank 1400 x 2000 page compresses to a few KiB; text, tables and the picture do not.
  EXPECT_GT(image.size(), 40'000u);
  fs::remove(model);
  fs::remove(html);
  fs::remove(png);
  fs::remove_all(shot_profile);
  fs::remove_all(dom_profile);
}

}  // namespace
}  // namespace memfold
