// The data-set records egca-batch works on come from egca::datasets (shared with the
// trainer); these names keep egca::batch code reading as before.
#pragma once

#include "egca/datasets/datasets.h"
#include "egca/datasets/problem.h"
#include "egca/datasets/samples.h"

namespace egca::batch {

using datasets::AppsPlusFields;
using datasets::BadRecord;
using datasets::ConvertOptions;
using datasets::ConvertSamples;
using datasets::DatasetFormat;
using datasets::DatasetFormatName;
using datasets::DatasetFormatNames;
using datasets::DatasetOptions;
using datasets::LoadProblems;
using datasets::LoadReport;
using datasets::LoadSamples;
using datasets::MapCoderCallTests;
using datasets::NearestProblemId;
using datasets::ParseDatasetFormat;
using datasets::ParseSampleSource;
using datasets::ProblemRecord;
using datasets::ProgramOf;
using datasets::Sample;
using datasets::SampleProgram;
using datasets::SampleSource;
using datasets::SampleSourceName;
using datasets::SampleSourceNames;
using datasets::SetAppsPlusField;
using datasets::WriteSamplesJsonl;

}  // namespace egca::batch
