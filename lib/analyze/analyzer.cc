#include <fnmatch.h>

#include <algorithm>
#include <regex>
#include <map>
#include <set>

#include "lib/analyze/analysis.h"
#include "lib/analyze/scan.h"
#include "lib/analyze/sizes.h"
#include "lib/analyze/what_if.h"
#include "lib/formats/checkpoint.h"
#include "lib/formats/detect.h"
#include "lib/formats/file_layout.h"
#include "lib/formats/thin.h"

namespace zipnn::analyze {

namespace {

using config::DeltaAgainst;

struct Kept {
  std::shared_ptr<Input> input;
  ContentId id;
  uint64_t standalone = 0;  // auto size

  formats::CheckpointView coded() const { return input->checkpoint.View(id); }
};

void Summarize(const ScanResult& scan, CheckpointRow& row) {
  for (const TensorChange& t : scan.tensors) {
    if (t.status != TensorStatus::kRemoved) {
      ++row.tensors;
      row.parameters += t.stats.elements;
      if (row.reference) {
        // A one-element tensor is a counter or a scale (an optimizer's
        // step, 100 -> 200), not a weight: its norms would outweigh every
        // weight's in the row's relative update, so they stay out of it.
        ChangeStats counted = t.stats;
        if (counted.elements <= 1) counted.diff_sq = counted.ref_sq = 0;
        row.change.Add(counted);
      }
    }
    if (!row.reference) continue;
    switch (t.status) {
      case TensorStatus::kChanged:
        ++row.changed_tensors;
        break;
      case TensorStatus::kFrozen:
        ++row.frozen_tensors;
        break;
      case TensorStatus::kAdded:
        ++row.added_tensors;
        break;
      case TensorStatus::kReshaped:
        ++row.reshaped_tensors;
        break;
      case TensorStatus::kRemoved:
        ++row.removed_tensors;
        break;
    }
  }
}

}  // namespace

std::vector<codec::Precision> ThinningOutcome::DefaultsFor(const formats::FileLayout& layout) {
  bool wide = false, narrow = false;
  for (const formats::Tensor& t : layout.tensors) {
    wide = wide || t.dtype == codec::DType::kF32 || t.dtype == codec::DType::kF64;
    narrow = narrow || t.dtype == codec::DType::kBF16 || t.dtype == codec::DType::kF16;
  }
  using Kind = codec::Precision::Kind;
  std::vector<codec::Precision> list;
  if (wide) {
    for (int b : {27, 23, 20}) list.push_back(codec::Precision{Kind::kAbsolute, b});
    list.push_back(codec::Precision{Kind::kRelative, 10});
  }
  if (narrow) {
    for (int k : {5, 4, 3}) list.push_back(codec::Precision{Kind::kRelative, k});
  }
  return list;
}

struct Analyzer::State {
  Options options;
  ThreadPool pool;
  Analysis analysis;
  std::map<size_t, Kept> kept;  // earlier checkpoints a later one may be compared with
  std::vector<Scenario> scenarios;

  explicit State(Options o)
      : options(std::move(o)),
        pool(options.policy.threads > 0 ? options.policy.threads : ThreadPool::DefaultThreads()) {
    options.base_interval = std::max(1u, options.base_interval);
    analysis.against = options.against;
    analysis.base_interval = options.base_interval;
    analysis.transform = options.policy.delta_transform;
    analysis.tensor_filter = options.filter_text;
    if (options.what_if) scenarios = MakeScenarios(options.policy);
  }

  // The periodic base a checkpoint's vs_base delta is against: the last
  // multiple of the interval before it.
  size_t PeriodicBase(size_t at) const { return (at - 1) / options.base_interval * options.base_interval; }

  // The selected tensors of `input` that the reference holds under other
  // names (both layouts hashed by Add).
  void CountShared(const Input& input, const Input& reference, CheckpointRow& row) const {
    formats::FileLayout target = input.checkpoint.layout();
    if (options.select) {
      target.tensors.erase(std::remove_if(target.tensors.begin(), target.tensors.end(),
                                          [&](const formats::Tensor& t) { return !options.select(t.name); }),
                           target.tensors.end());
    }
    const formats::Shared shared = formats::SharedByContent(target, reference.checkpoint.layout());
    row.shared_tensors = shared.tensors;
    row.shared_bytes = shared.bytes;
  }

  bool WantsHistogram(const CheckpointRow& row) const {
    const std::string& at = options.histogram_at;
    return at.empty() || at == row.label || at == std::to_string(row.index);
  }

  // The thinning what-if for checkpoint `at` (kept[at] is its input
  // until Add keeps it): what each precision's thinned checkpoint stores,
  // a base every base_interval and otherwise a delta against the previous
  // thinned one, and the error it takes.
  Status AddThinning(size_t at, const CheckpointRow& row, const Kept& current) {
    if (at == 0) {
      for (const codec::Precision& p :
           options.thinning.value_or(ThinningOutcome::DefaultsFor(current.input->checkpoint.layout()))) {
        analysis.thinning.push_back(ThinningOutcome{p});
      }
    }
    const bool base = at % options.base_interval == 0;
    analysis.exact_stored += base ? row.standalone.automatic : row.vs_previous.automatic;
    for (ThinningOutcome& outcome : analysis.thinning) {
      const formats::CheckpointView exact = current.coded();
      const formats::ThinnedSource thinned(exact, outcome.precision);
      const formats::CheckpointView target{&thinned, exact.layout, {}};
      std::optional<formats::ThinnedSource> previous;
      std::optional<formats::CheckpointView> against;
      if (!base) {
        previous.emplace(kept.at(at - 1).coded(), outcome.precision);
        against = formats::CheckpointView{&*previous, kept.at(at - 1).coded().layout, {}};
      }
      ZIPNN_ASSIGN_OR_RETURN(Sizes sizes, MeasureSizes(target, against ? &*against : nullptr, options.policy,
                                                       Coders::kAutoOnly, pool));
      outcome.stored_bytes += sizes.automatic;
      CountingSink discard;
      ZIPNN_ASSIGN_OR_RETURN(std::vector<formats::TensorError> errors,
                             formats::Thin(exact, outcome.precision, discard));
      for (const formats::TensorError& e : errors) {
        outcome.max_abs = std::max(outcome.max_abs, e.max_abs);
        outcome.max_rel = std::max(outcome.max_rel, e.max_rel);
        outcome.changed += e.changed;
        outcome.values += e.values;
        outcome.zeroed += e.zeroed;
        {
          ThinPart& part = e.name.rfind("optimizer", 0) == 0 ? outcome.optimizer : outcome.model;
          part.max_abs = std::max(part.max_abs, e.max_abs);
          part.max_rel = std::max(part.max_rel, e.max_rel);
          part.changed += e.changed;
          part.zeroed += e.zeroed;
          part.values += e.values;
        }
      }
    }
    return OkStatus();
  }

  Status Add(std::shared_ptr<Input> input) {
    const size_t at = analysis.rows.size();
    CheckpointRow row;
    row.index = at;
    row.label = input->label;
    row.source = input->source;
    row.subject = input->subject;
    row.raw_bytes = input->checkpoint.file().size();
    row.format = formats::FormatName(input->checkpoint.layout().format);
    // Each tensor's bytes hashed: a delta takes a tensor against the one
    // of its bytes in the other checkpoint first, whatever its name, as
    // the store does with a parent holding it (formats::ToDeltaRegions).
    formats::FileLayout hashed = input->checkpoint.layout();
    ZIPNN_RETURN_IF_ERROR(formats::HashTensorContents(input->checkpoint.file(), hashed, pool));
    input->checkpoint.SetLayout(std::move(hashed));

    Kept current{input, ContentId{}, 0};
    ZIPNN_ASSIGN_OR_RETURN(row.standalone,
                           MeasureSizes(current.coded(), nullptr, options.policy, Coders::kAll, pool, &current.id));
    current.standalone = row.standalone.automatic;
    row.id = current.id.Hex();
    const formats::CheckpointView target = current.coded();

    // Automatic delta sizes against earlier checkpoints, for the what-if.
    std::map<size_t, uint64_t> deltas;
    if (at > 0) {
      const formats::CheckpointView previous = kept.at(at - 1).coded();
      ZIPNN_ASSIGN_OR_RETURN(row.vs_previous, MeasureSizes(target, &previous, options.policy, Coders::kAll, pool));
      deltas[at - 1] = row.vs_previous.automatic;
      row.base = PeriodicBase(at);
      if (*row.base == at - 1) {
        row.vs_base = row.vs_previous;
      } else {
        const formats::CheckpointView base = kept.at(*row.base).coded();
        ZIPNN_ASSIGN_OR_RETURN(row.vs_base, MeasureSizes(target, &base, options.policy, Coders::kAll, pool));
      }
      deltas[*row.base] = row.vs_base.automatic;
      row.reference = options.against == DeltaAgainst::kBase ? *row.base : at - 1;
    }

    const Kept* reference = row.reference ? &kept.at(*row.reference) : nullptr;
    const bool histogram = WantsHistogram(row);
    ZIPNN_ASSIGN_OR_RETURN(ScanResult scan, ScanTensors(input->checkpoint.file(), input->checkpoint.layout(),
                                                        reference ? &reference->input->checkpoint.file() : nullptr,
                                                        reference ? &reference->input->checkpoint.layout() : nullptr,
                                                        options.select, histogram, pool));
    Summarize(scan, row);
    if (reference != nullptr && row.added_tensors + row.reshaped_tensors > 0) {
      CountShared(*input, *reference->input, row);
    }
    if (histogram) {
      analysis.histogram_at = at;
      analysis.histograms = std::move(scan.histograms);
    }
    if (row.reference) {
      for (TensorChange& t : scan.tensors) {
        t.checkpoint = at;
        analysis.tensors.push_back(std::move(t));
      }
    }

    ZIPNN_RETURN_IF_ERROR(AddThinning(at, row, current));

    // With the newest whole, the version before this one is re-stored as a
    // delta of this one (the second half of a stretch): its size.
    uint64_t reverse = 0;
    if (at > 0 && std::any_of(scenarios.begin(), scenarios.end(), [](const Scenario& s) { return s.Whole(); })) {
      const formats::CheckpointView previous = kept.at(at - 1).coded();
      ZIPNN_ASSIGN_OR_RETURN(Sizes sizes, MeasureSizes(previous, &target, options.policy, Coders::kAutoOnly, pool));
      reverse = sizes.automatic;
    }
    for (Scenario& s : scenarios) {
      // Where the version before this one goes decides where this one's
      // stretch begins.
      if (s.Whole() && at > 0) s.Demote(reverse);
      std::optional<uint64_t> delta;
      if (std::optional<size_t> against = s.Against(at)) {
        auto it = deltas.find(*against);
        if (it == deltas.end()) {
          const formats::CheckpointView base = kept.at(*against).coded();
          ZIPNN_ASSIGN_OR_RETURN(Sizes sizes, MeasureSizes(target, &base, options.policy, Coders::kAutoOnly, pool));
          it = deltas.emplace(*against, sizes.automatic).first;
        }
        delta = it->second;
      }
      s.Store(at, current.standalone, delta);
    }

    // Keep what a later checkpoint may be compared with: this one (the next
    // one's previous), the latest periodic base, and the last base of every
    // policy that makes deltas against its base.
    kept[at] = std::move(current);
    std::set<size_t> needed = {at, at / options.base_interval * options.base_interval};
    for (const Scenario& s : scenarios) {
      if (s.outcome.against == DeltaAgainst::kBase || s.Whole()) needed.insert(s.last_base);
    }
    for (auto it = kept.begin(); it != kept.end();) {
      it = needed.count(it->first) != 0 ? std::next(it) : kept.erase(it);
    }
    analysis.rows.push_back(std::move(row));
    return OkStatus();
  }
};

Analyzer::Analyzer(Options options) : state_(std::make_unique<State>(std::move(options))) {}
Analyzer::~Analyzer() = default;

Status Analyzer::Add(std::shared_ptr<Input> input) { return state_->Add(std::move(input)); }

Analysis Analyzer::Finish() {
  for (Scenario& s : state_->scenarios) {
    s.Finish();
    state_->analysis.policies.push_back(s.outcome);
  }
  state_->scenarios.clear();
  state_->kept.clear();
  return std::move(state_->analysis);
}

Result<std::function<bool(const std::string&)>> TensorsMatching(const std::string& glob, const std::string& regex) {
  if (!glob.empty() && !regex.empty()) {
    return InvalidArgument("give --tensors or --tensors-regex, not both");
  }
  if (!glob.empty()) {
    return std::function<bool(const std::string&)>(
        [glob](const std::string& name) { return ::fnmatch(glob.c_str(), name.c_str(), 0) == 0; });
  }
  if (!regex.empty()) {
    std::regex re;
    try {
      re = std::regex(regex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return InvalidArgument("--tensors-regex '" + regex + "' is not a valid regular expression (" + e.what() + ")");
    }
    return std::function<bool(const std::string&)>(
        [re](const std::string& name) { return std::regex_search(name, re); });
  }
  return std::function<bool(const std::string&)>();
}

}  // namespace zipnn::analyze
