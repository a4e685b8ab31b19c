#include "mosaic/Support/OpRuleRegistry.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using mosaic::OpRuleRegistry;

namespace {

/// What the rules under test saw.
struct Calls {
  int modules = 0;
  int casts = 0;
  int generic = 0;
};

LogicalResult moduleRule(Calls &calls, ModuleOp module) {
  ++calls.modules;
  return success(module.getBody() != nullptr);
}

LogicalResult genericRule(Calls &calls, Operation *) {
  ++calls.generic;
  return failure();
}

LogicalResult castRule(Calls &calls, UnrealizedConversionCastOp cast) {
  ++calls.casts;
  return success(cast.getNumOperands() == 0);
}

} // namespace

TEST(OpRuleRegistry, DispatchesByOpKind) {
  MLIRContext context;
  OpBuilder builder(&context);
  Location loc = builder.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  builder.setInsertionPointToStart(module->getBody());
  auto cast = UnrealizedConversionCastOp::create(
      builder, loc, TypeRange{builder.getI32Type()}, ValueRange{});

  OpRuleRegistry<Calls, int> registry;
  registry.add<ModuleOp>(moduleRule, 7);
  registry.add<UnrealizedConversionCastOp>(castRule);

  Calls calls;
  const auto *moduleEntry = registry.lookup(module->getOperation());
  ASSERT_NE(moduleEntry, nullptr);
  EXPECT_EQ(moduleEntry->info, 7);
  EXPECT_TRUE(succeeded(moduleEntry->apply(calls, module->getOperation())));
  const auto *castEntry = registry.lookup(cast);
  ASSERT_NE(castEntry, nullptr);
  EXPECT_EQ(castEntry->info, 0);
  EXPECT_TRUE(succeeded(castEntry->apply(calls, cast)));
  EXPECT_EQ(calls.modules, 1);
  EXPECT_EQ(calls.casts, 1);
  EXPECT_EQ(calls.generic, 0);
}

TEST(OpRuleRegistry, OneRuleForSeveralKinds) {
  MLIRContext context;
  OpBuilder builder(&context);
  Location loc = builder.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  builder.setInsertionPointToStart(module->getBody());
  auto cast = UnrealizedConversionCastOp::create(
      builder, loc, TypeRange{builder.getI32Type()}, ValueRange{});

  OpRuleRegistry<Calls> registry;
  EXPECT_EQ(registry.lookup(cast), nullptr);
  registry.add<ModuleOp, UnrealizedConversionCastOp>(genericRule);

  Calls calls;
  EXPECT_TRUE(failed(registry.lookup(module->getOperation())
                         ->apply(calls, module->getOperation())));
  EXPECT_TRUE(failed(registry.lookup(cast)->apply(calls, cast)));
  EXPECT_EQ(calls.generic, 2);
}
